package predict

import (
	"slices"
	"strings"
	"testing"
)

func TestParseDialsAndApps(t *testing.T) {
	if d, err := ParseDials("0:6:2"); err != nil || !slices.Equal(d, []float64{0, 2, 4, 6}) {
		t.Fatalf("range: %v %v", d, err)
	}
	if d, err := ParseDials("8, 0,4"); err != nil || !slices.Equal(d, []float64{0, 4, 8}) {
		t.Fatalf("list: %v %v", d, err)
	}
	for _, bad := range []string{"2,4", "0,4,4", "0:4:0", "0,x"} {
		if _, err := ParseDials(bad); err == nil {
			t.Errorf("dials %q accepted", bad)
		}
	}
	as, err := ParseApps([]string{"mcf=spec mcf", "./lbm --x=1"})
	if err != nil || as[0] != (App{Name: "mcf", Cmd: "spec mcf"}) || as[1] != (App{Name: "app2", Cmd: "./lbm --x=1"}) {
		t.Fatalf("apps %+v %v", as, err)
	}
	if _, err := ParseApps([]string{"a=x", "a=y"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := ParseApps(nil); err != ErrNoApps {
		t.Fatalf("no apps: %v", err)
	}
}
