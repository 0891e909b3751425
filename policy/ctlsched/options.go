package ctlsched

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"colo/sched"
)

// OptionError is a bad scheduler.options key or value: Line is its line in the benchmark
// file (0 when the options did not come from a file), so that the caller reports
// file:line and exits 2.
type OptionError struct {
	Line int
	Msg  string
}

func (e *OptionError) Error() string { return e.Msg }

// LineOf returns the line of an OptionError in err's chain (0 if none).
func LineOf(err error) int {
	var oe *OptionError
	if errors.As(err, &oe) {
		return oe.Line
	}
	return 0
}

// Decode decodes the scheduler options of cfg meant for scheduler name (plain keys and
// keys with one of the prefixes own, see Scoped) into dst, a pointer to a struct whose
// fields carry yaml tags. The options' YAML node (cfg.OptionsNode, from the benchmark
// file) is decoded key by key, so that every error names the key and its line; options
// given as a map (cfg.Options, built in code) are decoded the same way without lines. A
// key dst does not have is an error, listing the known ones; a whole-number field refuses
// 1.5 ("must be a whole number"), a number field refuses text ("is not a number"). Keys
// are decoded in sorted order, so the first error is the same on every run.
func Decode(name string, cfg sched.Config, dst any, own ...string) error {
	n := cfg.OptionsNode
	if n == nil && len(cfg.Options) > 0 {
		n = &yaml.Node{}
		if err := n.Encode(cfg.Options); err != nil {
			return &OptionError{Msg: fmt.Sprintf("%s: scheduler.options: %v", name, err)}
		}
	}
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &OptionError{Line: n.Line, Msg: fmt.Sprintf("%s: scheduler.options must be a mapping of keys to values", name)}
	}
	type kv struct{ k, v *yaml.Node }
	scoped := map[string]kv{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; prefixOf(k.Value) == "" {
			scoped[k.Value] = kv{k, n.Content[i+1]}
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if p := prefixOf(k.Value); p != "" {
			for _, q := range own {
				if p == q {
					scoped[k.Value[len(p):]] = kv{k, n.Content[i+1]}
				}
			}
		}
	}
	rv := reflect.ValueOf(dst).Elem()
	fields := map[string]int{}
	var known []string
	for i := 0; i < rv.NumField(); i++ {
		tag, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("yaml"), ",")
		if tag != "" && tag != "-" {
			fields[tag] = i
			known = append(known, tag)
		}
	}
	keys := slices.Sorted(maps.Keys(scoped))
	for _, k := range keys {
		p := scoped[k]
		i, ok := fields[k]
		if !ok {
			return &OptionError{Line: p.k.Line, Msg: fmt.Sprintf("%s: unknown scheduler.options key %q (known: %s)", name, k, strings.Join(known, ", "))}
		}
		if err := decodeValue(p.v, rv.Field(i)); err != nil {
			return &OptionError{Line: p.v.Line, Msg: fmt.Sprintf("%s: scheduler.options.%s = %s %s", name, k, p.v.Value, err)}
		}
	}
	return nil
}

// decodeValue decodes one value node into field f (a pointer field is allocated).
func decodeValue(v *yaml.Node, f reflect.Value) error {
	t := f.Type()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	nv := reflect.New(t)
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		var x float64
		if v.Kind != yaml.ScalarNode || v.Decode(&x) != nil || v.Tag == "!!str" {
			return errors.New("is not a number")
		}
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return errors.New("must be a whole number")
		}
		nv.Elem().SetInt(int64(x))
	case reflect.Float64:
		var x float64
		if v.Kind != yaml.ScalarNode || v.Decode(&x) != nil || v.Tag == "!!str" {
			return errors.New("is not a number")
		}
		nv.Elem().SetFloat(x)
	default:
		if err := v.Decode(nv.Interface()); err != nil {
			var te *yaml.TypeError
			if errors.As(err, &te) && len(te.Errors) > 0 {
				_, msg, _ := strings.Cut(te.Errors[0], ": ")
				return errors.New("is invalid: " + msg)
			}
			return fmt.Errorf("is invalid: %v", err)
		}
	}
	if f.Kind() == reflect.Pointer {
		f.Set(nv)
	} else {
		f.Set(nv.Elem())
	}
	return nil
}

// Set stores *v in *dst when the option was given.
func Set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Seconds stores an option given in seconds as a duration when it was given.
func Seconds(dst *time.Duration, s *float64) {
	if s != nil {
		*dst = time.Duration(*s * float64(time.Second))
	}
}

// WholeAt decodes a nested option value (e.g. one entry of a map option) as a whole number,
// with the same messages and line as Decode.
func WholeAt(name, key string, v *yaml.Node) (int, error) {
	var x int
	if err := decodeValue(v, reflect.ValueOf(&x).Elem()); err != nil {
		return 0, &OptionError{Line: v.Line, Msg: fmt.Sprintf("%s: scheduler.options.%s = %s %s", name, key, v.Value, err)}
	}
	return x, nil
}
