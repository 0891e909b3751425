package plugin_test

import (
	"context"
	"slices"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"sigs.k8s.io/yaml"

	"colo/k8s/deploy"
	"colo/k8s/kwokrun"
	"colo/k8s/plugin"
)

// deployedConfig is config.yaml of the scheduler's ConfigMap as deployed.
func deployedConfig(t *testing.T) string {
	b, err := deploy.FS.ReadFile(deploy.SchedulerConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range splitYAML(b) {
		var m struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal(doc, &m); err == nil && m.Kind == "ConfigMap" {
			return m.Data["config.yaml"]
		}
	}
	t.Fatalf("%s: no ConfigMap", deploy.SchedulerConfig)
	return ""
}

func splitYAML(b []byte) [][]byte {
	var out [][]byte
	start := 0
	for i := 0; i+4 <= len(b); i++ {
		if (i == 0 || b[i-1] == '\n') && string(b[i:i+4]) == "---\n" {
			out = append(out, b[start:i])
			start = i + 4
		}
	}
	return append(out, b[start:])
}

// Every configuration that runs ColoInterference (the deployed one, the experiment's colo
// and colo_stock profiles) decodes with the scheduler's defaults into a profile where the
// plugin runs at PreFilter, Filter, PreScore, Score, Reserve and first at Bind (before the
// default binder), and the scheduler framework accepts it with the plugin built from its
// arguments.
func TestConfigsRunColoAtEveryPoint(t *testing.T) {
	schedmetrics.Register()
	for _, c := range []struct{ name, profile, cfg string }{
		{"deployed", "colo-scheduler", deployedConfig(t)},
		{"experiment colo", "colo-scheduler", kwokrun.ColoConfig(1, 0, "")},
		{"experiment colo_stock", "colo-stock", kwokrun.ColoStockConfig(1, 0, "")},
	} {
		obj, _, err := scheme.Codecs.UniversalDecoder().Decode([]byte(c.cfg), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		kc := obj.(*config.KubeSchedulerConfiguration)
		var prof *config.KubeSchedulerProfile
		for i := range kc.Profiles {
			if kc.Profiles[i].SchedulerName == c.profile {
				prof = &kc.Profiles[i]
			}
		}
		if prof == nil {
			t.Fatalf("%s: no profile %s", c.name, c.profile)
		}
		names := func(ps config.PluginSet) []string {
			var out []string
			for _, p := range ps.Enabled {
				out = append(out, p.Name)
			}
			return out
		}
		pl := prof.Plugins
		for point, set := range map[string]config.PluginSet{"preFilter": pl.PreFilter, "filter": pl.Filter, "preScore": pl.PreScore, "score": pl.Score, "reserve": pl.Reserve} {
			if !slices.Contains(names(set), plugin.Name) {
				t.Errorf("%s: %s runs %v, not %s", c.name, point, names(set), plugin.Name)
			}
		}
		if b := names(pl.Bind); !slices.Equal(b, []string{plugin.Name, "DefaultBinder"}) {
			t.Errorf("%s: bind runs %v", c.name, b)
		}
		reg := plugins.NewInTreeRegistry()
		if err := reg.Merge(frameworkruntime.Registry{plugin.Name: plugin.New}); err != nil {
			t.Fatal(err)
		}
		cs := fake.NewClientset()
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := frameworkruntime.NewFramework(ctx, reg, prof, frameworkruntime.WithClientSet(cs),
			frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(cs, 0)),
			frameworkruntime.WithSnapshotSharedLister(schedcache.NewEmptySnapshot())); err != nil {
			t.Errorf("%s: the framework refuses the profile: %v", c.name, err)
		}
		cancel()
	}
}
