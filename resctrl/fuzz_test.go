package resctrl_test

import (
	"reflect"
	"strings"
	"testing"

	"colo/resctrl"
)

// FuzzParseSchemata: no panics; whatever parses formats back to text that parses to
// the same value.
func FuzzParseSchemata(f *testing.F) {
	for _, s := range []string{"L3:0=fff;1=fff\nMB:0=100;1=100\n", "    L3:0=00ff\n  MB:0=2048;1=  16\n", "L3CODE:0=f\nL3DATA:0=0x3\n", "L2:0=ff;", "MB:0=4294967295"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := resctrl.ParseSchemata(s)
		if err != nil {
			return
		}
		again, err := resctrl.ParseSchemata(sc.String())
		if err != nil {
			t.Fatalf("formatted %q does not parse: %v", sc.String(), err)
		}
		if !reflect.DeepEqual(sc, again) && len(sc) > 0 {
			t.Fatalf("round trip %q: %v != %v", s, sc, again)
		}
		if _, err := resctrl.ParseSpec(s); err != nil && len(sc) > 0 && !strings.Contains(s, ";") {
			t.Fatalf("schemata %q parses but not as a spec: %v", s, err)
		}
	})
}

// FuzzParseInfo: the info parsers never panic and reject what they cannot represent.
func FuzzParseInfo(f *testing.F) {
	f.Add("L3", "fff\n", "1\n", "0\n", "16\n", "0=SSSSSSSSSSSS;1=SSSSSSSSSSEE\n", "0\n")
	f.Add("MB", "", "10\n", "", "8\n", "", "")
	f.Add("L2", "ff\n", "0\n", "f0\n", "8\n", "0=XXXXHHHH\n", "1\n")
	f.Fuzz(func(t *testing.T, name, cbm, minBits, shareable, closids, bitUsage, sparse string) {
		files := map[string]string{"cbm_mask": cbm, "min_cbm_bits": minBits, "shareable_bits": shareable,
			"num_closids": closids, "bit_usage": bitUsage, "sparse_masks": sparse, "min_bandwidth": minBits, "bandwidth_gran": closids}
		r, err := resctrl.ParseResourceInfo(name, files)
		if err != nil {
			return
		}
		if r.Cache && r.CBMMask != 0 && (r.CBMLen < 1 || r.CBMLen > 64 || r.CBMMask != 1<<uint(r.CBMLen)-1 && r.CBMLen < 64) {
			t.Fatalf("cbm_mask %x with cbm len %d", r.CBMMask, r.CBMLen)
		}
		if r.NumCLOSIDs < 0 || r.MinCBMBits < 0 {
			t.Fatalf("negative count %+v", r)
		}
	})
}
