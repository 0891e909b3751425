package emu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"colo/internal/machinetest"
	"colo/machine"
)

// fileOps is the file-level surface a conformance case may use: the in-process FS and
// plain os calls on a FUSE mount both provide it.
type fileOps interface {
	ReadFile(name string) ([]byte, error)
	WriteFile(name string, data []byte) error
	Mkdir(name string) error
	Rmdir(name string) error
	ReadDir(name string) ([]string, error)
	Rename(oldName, newName string) error
}

// osOps performs plain os calls under a mounted directory.
type osOps struct{ root string }

func (o osOps) p(n string) string                 { return filepath.Join(o.root, n) }
func (o osOps) ReadFile(n string) ([]byte, error) { return os.ReadFile(o.p(n)) }
func (o osOps) Mkdir(n string) error              { return os.Mkdir(o.p(n), 0o755) }
func (o osOps) Rmdir(n string) error              { return syscall.Rmdir(o.p(n)) }
func (o osOps) WriteFile(n string, b []byte) error {
	f, err := os.OpenFile(o.p(n), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
func (o osOps) ReadDir(n string) ([]string, error) {
	ents, err := os.ReadDir(o.p(n))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		out = append(out, name)
	}
	return out, nil
}

// env is one conformance case's world.
type env struct {
	t    *testing.T
	p    *Profile
	fs   fileOps
	e    *Emulator
	fuse bool
}

func (h *env) status() string {
	h.t.Helper()
	b, err := h.fs.ReadFile("info/last_cmd_status")
	if err != nil {
		h.t.Fatalf("read last_cmd_status: %v", err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// ok writes and requires success.
func (h *env) ok(path, data string) {
	h.t.Helper()
	if err := h.fs.WriteFile(path, []byte(data)); err != nil {
		h.t.Fatalf("write %q to %s: %v (last_cmd_status %q)", data, path, err, h.status())
	}
	if s := h.status(); s != "ok" {
		h.t.Fatalf("write %q to %s succeeded but last_cmd_status is %q, want ok", data, path, s)
	}
}

// fail writes and requires errno and a last_cmd_status containing want (exact match
// when want starts with "=").
func (h *env) fail(path, data string, errno syscall.Errno, want string) {
	h.t.Helper()
	err := h.fs.WriteFile(path, []byte(data))
	if err == nil {
		h.t.Fatalf("write %q to %s succeeded, want %v %q", data, path, errno, want)
	}
	if !errors.Is(err, errno) {
		h.t.Fatalf("write %q to %s: %v, want %v", data, path, err, errno)
	}
	h.wantStatus(want)
}

func (h *env) wantStatus(want string) {
	h.t.Helper()
	got := h.status()
	if exact, ok := strings.CutPrefix(want, "="); ok {
		if got != exact {
			h.t.Fatalf("last_cmd_status %q, want %q", got, exact)
		}
		return
	}
	if !strings.Contains(got, want) {
		h.t.Fatalf("last_cmd_status %q, want it to contain %q", got, want)
	}
}

func (h *env) read(path string) string {
	h.t.Helper()
	b, err := h.fs.ReadFile(path)
	if err != nil {
		h.t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

func (h *env) mkdir(path string) {
	h.t.Helper()
	if err := h.fs.Mkdir(path); err != nil {
		h.t.Fatalf("mkdir %s: %v (last_cmd_status %q)", path, err, h.status())
	}
}

func (h *env) mkdirFail(path string, errno syscall.Errno, want string) {
	h.t.Helper()
	err := h.fs.Mkdir(path)
	if !errors.Is(err, errno) {
		h.t.Fatalf("mkdir %s: %v, want %v", path, err, errno)
	}
	if want != "" {
		h.wantStatus(want)
	}
}

func (h *env) rmdir(path string) {
	h.t.Helper()
	if err := h.fs.Rmdir(path); err != nil {
		h.t.Fatalf("rmdir %s: %v", path, err)
	}
}

func (h *env) tasks(path string) string {
	h.t.Helper()
	return strings.Join(strings.Fields(h.read(path)), ",")
}

// line returns the value text of resource res on domain d in a schemata file.
func (h *env) value(group, res string, d int) string {
	h.t.Helper()
	for _, l := range strings.Split(h.read(filepath.Join(group, "schemata")), "\n") {
		name, rest, ok := strings.Cut(l, ":")
		if !ok || strings.TrimSpace(name) != res {
			continue
		}
		for _, dv := range strings.Split(rest, ";") {
			id, v, _ := strings.Cut(dv, "=")
			if id == fmt.Sprint(d) {
				return strings.TrimSpace(v)
			}
		}
	}
	h.t.Fatalf("%s/schemata has no %s domain %d:\n%s", group, res, d, h.read(filepath.Join(group, "schemata")))
	return ""
}

// Profile facts used by the cases (inputs, not emulator outputs).
func cacheName(p *Profile) string {
	if p.CDP {
		return "L3CODE"
	}
	return "L3"
}
func hasMB(p *Profile) bool      { return p.MB != nil }
func sparse(p *Profile) bool     { return p.L3.Sparse }
func isAMD(p *Profile) bool      { return p.Vendor == machine.AMD }
func isMPAM(p *Profile) bool     { return p.Vendor == machine.Arm }
func isIntel(p *Profile) bool    { return p.Vendor == machine.Intel }
func mbPercent(p *Profile) bool  { return p.MB != nil && !p.MBAMBps && p.MB.Max == 100 }
func fullMask(p *Profile) uint64 { return uint64(1)<<uint(p.L3.CBMLen) - 1 }
func hexw(p *Profile, v uint64) string {
	if p.Padded {
		return fmt.Sprintf("%0*x", (p.L3.CBMLen+3)/4, v)
	}
	return fmt.Sprintf("%x", v)
}
func closidsOf(p *Profile) int {
	n := p.L3.NumCLOSIDs
	if p.CDP {
		n /= 2
	}
	if p.MB != nil {
		n = min(n, p.MB.NumCLOSIDs)
	}
	if p.SMBA != nil {
		n = min(n, p.SMBA.NumCLOSIDs)
	}
	return n
}

type confCase struct {
	name string
	// rule is the documented behaviour under test (resctrl.rst / fs/resctrl, anchors.md §4).
	rule string
	only func(p *Profile) bool
	// inProcess cases use emulator calls beyond files (sources, CPU hotplug, internals).
	inProcess bool
	run       func(h *env)
}

// exclusiveSetup shrinks the default group to the upper bits, gives group p0 the two
// low bits of domain 0 and makes it exclusive.
func exclusiveSetup(h *env) {
	p := h.p
	r := cacheName(p)
	h.mkdir("p0")
	h.ok("p0/schemata", allDoms(p, r, 3))
	h.ok("schemata", allDoms(p, r, fullMask(p)&^3))
	if p.CDP {
		h.ok("schemata", allDoms(p, "L3DATA", fullMask(p)&^3))
		h.ok("p0/schemata", allDoms(p, "L3DATA", 3))
	}
	if p.L2 != nil { // an exclusive group may overlap no one on any cache
		var parts, rest []string
		for d := 0; d < p.L2.Domains; d++ {
			parts = append(parts, fmt.Sprintf("%d=c0", d))
			rest = append(rest, fmt.Sprintf("%d=3f", d))
		}
		h.ok("p0/schemata", "L2:"+strings.Join(parts, ";")+"\n")
		h.ok("schemata", "L2:"+strings.Join(rest, ";")+"\n")
	}
	h.ok("p0/mode", "exclusive\n")
}

// allDoms is one schemata line giving v to every L3 domain.
func allDoms(p *Profile, res string, v uint64) string {
	var parts []string
	for _, id := range p.L3IDs() {
		parts = append(parts, fmt.Sprintf("%d=%x", id, v))
	}
	return res + ":" + strings.Join(parts, ";") + "\n"
}

// lastDom and secondDom are kernel domain ids of the L3 (the last, and the second or
// the only one).
func lastDom(p *Profile) int { ids := p.L3IDs(); return ids[len(ids)-1] }
func secondDom(p *Profile) int {
	ids := p.L3IDs()
	return ids[min(1, len(ids)-1)]
}

var confCases = []confCase{
	{name: "info-cbm-mask", rule: "info/*/cbm_mask is the full mask (100%)", run: func(h *env) {
		if got := h.read("info/" + cacheName(h.p) + "/cbm_mask"); got != fmt.Sprintf("%x\n", fullMask(h.p)) {
			h.t.Fatalf("cbm_mask %q", got)
		}
	}},
	{name: "info-min-cbm-bits", rule: "min_cbm_bits is 0 on AMD, 1 on Intel and MPAM", run: func(h *env) {
		want := "1\n"
		if isAMD(h.p) {
			want = "0\n"
		}
		if got := h.read("info/" + cacheName(h.p) + "/min_cbm_bits"); got != want {
			h.t.Fatalf("min_cbm_bits %q want %q", got, want)
		}
	}},
	{name: "info-sparse-masks", rule: "sparse_masks is 1 on AMD and MPAM; on Intel what CPUID says (0 before the parts that added non-contiguous CAT, 1 on intel-snc2): never inferred from the vendor", run: func(h *env) {
		want := "0\n"
		if !isIntel(h.p) || h.p.Name == "intel-snc2" {
			want = "1\n"
		}
		if got := h.read("info/" + cacheName(h.p) + "/sparse_masks"); got != want {
			h.t.Fatalf("sparse_masks %q want %q", got, want)
		}
	}},
	{name: "info-num-closids", rule: "num_closids per resource; CDP halves it", run: func(h *env) {
		want := h.p.L3.NumCLOSIDs
		if h.p.CDP {
			want /= 2
		}
		if got := h.read("info/" + cacheName(h.p) + "/num_closids"); got != fmt.Sprintf("%d\n", want) {
			h.t.Fatalf("num_closids %q want %d", got, want)
		}
	}},
	{name: "info-shareable-bits", rule: "MPAM reports every bit shareable", run: func(h *env) {
		want := "0\n"
		if isMPAM(h.p) {
			want = fmt.Sprintf("%x\n", fullMask(h.p))
		}
		if got := h.read("info/" + cacheName(h.p) + "/shareable_bits"); got != want {
			h.t.Fatalf("shareable_bits %q want %q", got, want)
		}
	}},
	{name: "info-mb", rule: "MB: Intel min=gran=10 with thread_throttle_mode; AMD min 0 gran 1; MPAM min=gran", only: hasMB, run: func(h *env) {
		type mb struct{ min, gran string }
		want := map[machine.Vendor]mb{machine.Intel: {"10\n", "10\n"}, machine.AMD: {"0\n", "1\n"}, machine.Arm: {"5\n", "5\n"}}[h.p.Vendor]
		if got := h.read("info/MB/min_bandwidth"); got != want.min {
			h.t.Fatalf("min_bandwidth %q want %q", got, want.min)
		}
		if got := h.read("info/MB/bandwidth_gran"); got != want.gran {
			h.t.Fatalf("bandwidth_gran %q want %q", got, want.gran)
		}
		_, err := h.fs.ReadFile("info/MB/thread_throttle_mode")
		if isIntel(h.p) != (err == nil) {
			h.t.Fatalf("thread_throttle_mode present=%v on %s", err == nil, h.p.Vendor)
		}
	}},
	{name: "info-last-cmd-status-ok", rule: "last_cmd_status reads ok before any failure", run: func(h *env) {
		if got := h.read("info/last_cmd_status"); got != "ok\n" {
			h.t.Fatalf("got %q", got)
		}
	}},
	{name: "default-schemata-intel", rule: "default group owns all ways and 100% MB; names right-aligned to the longest name, counting the CODE/DATA suffix of a CDP-capable L3 even without cdp; padded values",
		only: func(p *Profile) bool { return p.Name == "intel" }, run: func(h *env) {
			if got := h.read("schemata"); got != "    L3:0=fff;1=fff\n    MB:0=100;1=100\n" {
				h.t.Fatalf("got %q", got)
			}
		}},
	{name: "default-schemata-cdp", rule: "CDP splits L3 into L3CODE and L3DATA; shorter names are right-aligned",
		only: func(p *Profile) bool { return p.Name == "intel-cdp" }, run: func(h *env) {
			want := "L3CODE:0=fff;1=fff\nL3DATA:0=fff;1=fff\n    MB:0=100;1=100\n"
			if got := h.read("schemata"); got != want {
				h.t.Fatalf("got %q want %q", got, want)
			}
		}},
	{name: "default-schemata-amd-smba", rule: "AMD MB default 2048 (unlimited), width 4; SMBA line",
		only: func(p *Profile) bool { return p.Name == "amd-smba" }, run: func(h *env) {
			got := h.read("schemata")
			lines := strings.Split(got, "\n")
			if len(lines) != 4 || !strings.HasPrefix(lines[0], "    L3:0=ffff;1=ffff;") || !strings.HasPrefix(lines[1], "    MB:0=2048;") || !strings.HasPrefix(lines[2], "  SMBA:0=2048;") || !strings.HasSuffix(lines[1], "7=2048") {
				h.t.Fatalf("got %q", got)
			}
		}},
	{name: "default-schemata-mbps", rule: "mba_MBps: MB defaults to MBA_MAX_MBPS (U32_MAX)", only: func(p *Profile) bool { return p.MBAMBps }, run: func(h *env) {
		if v := h.value("", "MB", 0); v != "4294967295" {
			h.t.Fatalf("MB default %q", v)
		}
	}},
	{name: "noncontiguous-mask", rule: "non-contiguous CBM rejected unless sparse_masks (\"The mask 5 has non-consecutive 1-bits\")", run: func(h *env) {
		r := cacheName(h.p)
		h.mkdir("g")
		if sparse(h.p) {
			h.ok("g/schemata", r+":0=5\n")
			if v := h.value("g", r, 0); v != hexw(h.p, 5) {
				h.t.Fatalf("read back %q", v)
			}
			return
		}
		before := h.read("g/schemata")
		h.fail("g/schemata", r+":0=5\n", syscall.EINVAL, "=The mask 5 has non-consecutive 1-bits")
		if h.read("g/schemata") != before {
			h.t.Fatal("rejected write changed the schemata")
		}
	}},
	{name: "zero-mask", rule: "a zero CBM is out of range unless min_cbm_bits is 0 (AMD)", run: func(h *env) {
		r := cacheName(h.p)
		h.mkdir("g")
		if isAMD(h.p) {
			h.ok("g/schemata", fmt.Sprintf("%s:%d=0\n", r, secondDom(h.p)))
			if v := h.value("g", r, secondDom(h.p)); v != hexw(h.p, 0) {
				h.t.Fatalf("read back %q", v)
			}
			return
		}
		h.fail("g/schemata", r+":0=0\n", syscall.EINVAL, "=Mask out of range")
	}},
	{name: "mask-wider-than-cbm", rule: "a CBM above cbm_mask is out of range", run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", fmt.Sprintf("%s:0=%x\n", cacheName(h.p), fullMask(h.p)+1), syscall.EINVAL, "=Mask out of range")
	}},
	{name: "full-mask-0x-prefix", rule: "masks may carry 0x (kstrtoul base 16)", run: func(h *env) {
		h.mkdir("g")
		h.ok("g/schemata", fmt.Sprintf("%s:0=0x%x\n", cacheName(h.p), fullMask(h.p)))
	}},
	{name: "non-hex-mask", rule: "\"Non-hex character in the mask %s\"", run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", cacheName(h.p)+":0=xyz\n", syscall.EINVAL, "=Non-hex character in the mask xyz")
	}},
	{name: "missing-newline", rule: "a write without trailing newline fails with EINVAL before last_cmd_status is reset", run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", "L9:0=1\n", syscall.EINVAL, "Unknown or unsupported resource name 'L9'")
		err := h.fs.WriteFile("g/schemata", []byte(cacheName(h.p)+":0=1"))
		if !errors.Is(err, syscall.EINVAL) {
			h.t.Fatalf("got %v want EINVAL", err)
		}
		h.wantStatus("=Unknown or unsupported resource name 'L9'")
	}},
	{name: "empty-write", rule: "nbytes == 0 is EINVAL", inProcess: true, run: func(h *env) {
		if err := h.fs.WriteFile("schemata", nil); !errors.Is(err, syscall.EINVAL) {
			h.t.Fatalf("got %v", err)
		}
	}},
	{name: "unknown-resource", rule: "\"Unknown or unsupported resource name '%s'\"", run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", "L4:0=f\n", syscall.EINVAL, "=Unknown or unsupported resource name 'L4'")
	}},
	{name: "mb-without-mba", rule: "a resource the platform lacks is unknown", only: func(p *Profile) bool { return p.MB == nil }, run: func(h *env) {
		h.fail("schemata", "MB:0=50\n", syscall.EINVAL, "=Unknown or unsupported resource name 'MB'")
	}},
	{name: "plain-l3-under-cdp", rule: "with CDP the L3 line is replaced by L3CODE/L3DATA", only: func(p *Profile) bool { return p.CDP }, run: func(h *env) {
		h.fail("schemata", "L3:0=f\n", syscall.EINVAL, "=Unknown or unsupported resource name 'L3'")
	}},
	{name: "smba", rule: "SMBA exists on AMD with SMBA only; same units as MB", only: func(p *Profile) bool { return isAMD(p) }, run: func(h *env) {
		h.mkdir("g")
		if h.p.SMBA == nil {
			h.fail("g/schemata", "SMBA:0=16\n", syscall.EINVAL, "=Unknown or unsupported resource name 'SMBA'")
			return
		}
		h.ok("g/schemata", "SMBA:0=16\n")
		if v := h.value("g", "SMBA", 0); v != "16" {
			h.t.Fatalf("SMBA %q", v)
		}
	}},
	{name: "missing-colon", rule: "\"Missing ':'\"", run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", cacheName(h.p)+"0=f\n", syscall.EINVAL, "=Missing ':'")
	}},
	{name: "blank-line", rule: "an empty line inside a write is a line without ':'", run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", cacheName(h.p)+":0=1\n\n", syscall.EINVAL, "=Missing ':'")
	}},
	{name: "missing-value", rule: "\"Missing '%s' value\"", run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", cacheName(h.p)+":\n", syscall.EINVAL, "=Missing '"+cacheName(h.p)+"' value")
	}},
	{name: "non-numeric-domain", rule: "\"Missing '=' or non-numeric domain\"", run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", cacheName(h.p)+":x=f\n", syscall.EINVAL, "=Missing '=' or non-numeric domain")
		h.fail("g/schemata", cacheName(h.p)+":0f\n", syscall.EINVAL, "=Missing '=' or non-numeric domain")
		h.fail("g/schemata", cacheName(h.p)+": 0=1\n", syscall.EINVAL, "=Missing '=' or non-numeric domain")
	}},
	{name: "duplicate-domain", rule: "\"Duplicate domain %d\"", run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", cacheName(h.p)+":0=1;0=1\n", syscall.EINVAL, "=Duplicate domain 0")
	}},
	{name: "duplicate-domain-across-lines", rule: "a domain staged by an earlier line of the same write is a duplicate", run: func(h *env) {
		h.mkdir("g")
		r := cacheName(h.p)
		h.fail("g/schemata", r+":0=1\n"+r+":0=1\n", syscall.EINVAL, "=Duplicate domain 0")
	}},
	{name: "unknown-domain", rule: "an unknown domain id is EINVAL without a message", run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", cacheName(h.p)+":99=1\n", syscall.EINVAL, "=ok")
	}},
	{name: "trailing-semicolon", rule: "a trailing ';' ends the line", run: func(h *env) {
		h.mkdir("g")
		h.ok("g/schemata", cacheName(h.p)+":0=1;\n")
	}},
	{name: "value-whitespace", rule: "values are stripped (strim), ids are not", only: hasMB, run: func(h *env) {
		h.mkdir("g")
		v := "50"
		if isAMD(h.p) || h.p.MBAMBps {
			v = "64"
		}
		h.ok("g/schemata", "MB:0= "+v+" \n")
		if got := h.value("g", "MB", 0); got != v {
			h.t.Fatalf("MB %q", got)
		}
	}},
	{name: "mb-below-min", rule: "\"MB value %u out of range [%d,%d]\" below min_bandwidth", only: func(p *Profile) bool { return mbPercent(p) }, run: func(h *env) {
		h.mkdir("g")
		lo := h.p.MB.Min - 1
		h.fail("g/schemata", fmt.Sprintf("MB:0=%d\n", lo), syscall.EINVAL, fmt.Sprintf("=MB value %d out of range [%d,100]", lo, h.p.MB.Min))
	}},
	{name: "mb-above-max", rule: "MB above the maximum (100 %, or 2048 on AMD) is out of range", only: func(p *Profile) bool { return p.MB != nil && !p.MBAMBps }, run: func(h *env) {
		h.mkdir("g")
		want := fmt.Sprintf("=MB value 101 out of range [%d,100]", h.p.MB.Min)
		v := 101
		if isAMD(h.p) {
			v, want = 2049, "=MB value 2049 out of range [0,2048]"
		}
		h.fail("g/schemata", fmt.Sprintf("MB:0=%d\n", v), syscall.EINVAL, want)
	}},
	{name: "mb-rounds-up", rule: "MB is rounded up to the next bandwidth_gran step", only: func(p *Profile) bool { return mbPercent(p) }, run: func(h *env) {
		h.mkdir("g")
		h.ok("g/schemata", "MB:0=12\n")
		want := map[machine.Vendor]string{machine.Intel: "20", machine.Arm: "15"}[h.p.Vendor]
		if got := h.value("g", "MB", 0); got != want {
			h.t.Fatalf("MB 12 read back %q want %q", got, want)
		}
	}},
	{name: "mb-amd-eighth-gbps", rule: "AMD MB is in 1/8 GB/s: 16 = 2 GB/s kept as is, 0 allowed, 2048 unlimited", only: func(p *Profile) bool { return isAMD(p) }, run: func(h *env) {
		h.mkdir("g")
		ids := h.p.L3IDs()
		h.ok("g/schemata", fmt.Sprintf("MB:%d=16;%d=0;%d=2048\n", ids[0], ids[1], ids[2]))
		for i, want := range []string{"16", "0", "2048"} {
			if got := h.value("g", "MB", ids[i]); got != want {
				h.t.Fatalf("MB:%d %q want %q", ids[i], got, want)
			}
		}
	}},
	{name: "mb-invalid", rule: "\"Invalid MB value %s\"", only: hasMB, run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", "MB:0=abc\n", syscall.EINVAL, "=Invalid MB value abc")
	}},
	{name: "mba-mbps", rule: "mba_MBps takes any MiB/s value without range check; mba_MBps_event validates the event", only: func(p *Profile) bool { return p.MBAMBps }, run: func(h *env) {
		h.mkdir("g")
		h.ok("g/schemata", "MB:0=5000;1=3\n")
		if got := h.value("g", "MB", 0); got != "5000" {
			h.t.Fatalf("MB %q", got)
		}
		if got := h.read("g/mba_MBps_event"); got != "mbm_local_bytes\n" {
			h.t.Fatalf("event %q", got)
		}
		h.ok("g/mba_MBps_event", "mbm_total_bytes\n")
		if err := h.fs.WriteFile("g/mba_MBps_event", []byte("mbm_local_bytes")); !errors.Is(err, syscall.EINVAL) {
			h.t.Fatalf("event without newline: %v", err)
		}
		h.fail("g/mba_MBps_event", "foo\n", syscall.EINVAL, "=Unsupported event id 'foo'")
	}},
	{name: "mba-mbps-applies-at-parse", rule: "under mba_MBps an MB value is applied while parsing (parse_bw), so it sticks although a later line fails, and a repeated domain is no duplicate", only: func(p *Profile) bool { return p.MBAMBps }, run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", "MB:0=500\nL4:0=1\n", syscall.EINVAL, "=Unknown or unsupported resource name 'L4'")
		if got := h.value("g", "MB", 0); got != "500" {
			h.t.Fatalf("MB %q, want 500 (applied before the failing line)", got)
		}
		h.ok("g/schemata", "MB:1=7;1=9\n")
		if got := h.value("g", "MB", 1); got != "9" {
			h.t.Fatalf("MB:1 %q want 9", got)
		}
	}},
	{name: "partial-write-keeps-others", rule: "a write names only what changes; other resources and domains keep their values", run: func(h *env) {
		h.mkdir("g")
		r := cacheName(h.p)
		h.ok("g/schemata", r+":0=1\n")
		before := h.value("g", r, 0)
		mbBefore := ""
		if hasMB(h.p) {
			mbBefore = h.value("g", "MB", 0)
		}
		if h.p.L3.Domains > 1 {
			h.ok("g/schemata", fmt.Sprintf("%s:%d=3\n", r, lastDom(h.p)))
			if h.value("g", r, 0) != before || h.value("g", r, lastDom(h.p)) != hexw(h.p, 3) {
				h.t.Fatalf("after partial write:\n%s", h.read("g/schemata"))
			}
		}
		if hasMB(h.p) && h.p.MB.Domains > 1 {
			h.ok("g/schemata", fmt.Sprintf("MB:%d=%d\n", lastDom(h.p), h.p.MB.Min))
			if h.value("g", "MB", lastDom(h.p)) != fmt.Sprint(h.p.MB.Min) {
				h.t.Fatalf("MB write not applied:\n%s", h.read("g/schemata"))
			}
			if h.value("g", "MB", 0) != mbBefore || h.value("g", r, 0) != before {
				h.t.Fatalf("MB write changed other values:\n%s", h.read("g/schemata"))
			}
		}
	}},
	{name: "failed-multiline-changes-nothing", rule: "all lines are staged and applied only if every line is valid", run: func(h *env) {
		h.mkdir("g")
		r := cacheName(h.p)
		before := h.read("g/schemata")
		second := "L4:0=1\n"
		want := "=Unknown or unsupported resource name 'L4'"
		if mbPercent(h.p) {
			second, want = "MB:0=1\n", fmt.Sprintf("=MB value 1 out of range [%d,100]", h.p.MB.Min)
		}
		h.fail("g/schemata", r+":0=3\n"+second, syscall.EINVAL, want)
		if after := h.read("g/schemata"); after != before {
			h.t.Fatalf("failed write changed schemata:\n%s\n->\n%s", before, after)
		}
	}},
	{name: "last-cmd-status-resets", rule: "each command resets last_cmd_status; success reads ok", run: func(h *env) {
		h.mkdir("g")
		h.fail("g/schemata", "L4:0=1\n", syscall.EINVAL, "L4")
		h.ok("g/schemata", cacheName(h.p)+":0=1\n")
	}},
	{name: "padded-format", rule: "older kernels zero-pad masks to (cbm_len+3)/4 digits", run: func(h *env) {
		h.mkdir("g")
		h.ok("g/schemata", cacheName(h.p)+":0=3\n")
		want := "3"
		if h.p.Padded {
			want = strings.Repeat("0", (h.p.L3.CBMLen+3)/4-1) + "3"
		}
		if got := h.value("g", cacheName(h.p), 0); got != want {
			h.t.Fatalf("got %q want %q", got, want)
		}
	}},
	{name: "size-file", rule: "size = cache_size / cbm_len * popcount(cbm)", run: func(h *env) {
		h.mkdir("g")
		h.ok("g/schemata", cacheName(h.p)+":0=3\n")
		want := fmt.Sprintf("%s:0=%d", cacheName(h.p), h.p.L3.SizeBytes/uint64(h.p.L3.CBMLen)*2)
		if got := h.read("g/size"); !strings.Contains(got, want+";") && !strings.Contains(got, want+"\n") {
			h.t.Fatalf("size %q lacks %q", got, want)
		}
	}},
	{name: "bit-usage-initial", rule: "bit_usage: S for software-shareable bits, X where hardware-shareable too", run: func(h *env) {
		c := "S"
		if isMPAM(h.p) {
			c = "X"
		}
		want := "0=" + strings.Repeat(c, h.p.L3.CBMLen)
		if got := h.read("info/" + cacheName(h.p) + "/bit_usage"); !strings.HasPrefix(got, want) {
			h.t.Fatalf("bit_usage %q want prefix %q", got, want)
		}
	}},
	{name: "exclusive-needs-no-overlap", rule: "\"Schemata overlaps\" while another group (the default one) shares the bits", run: func(h *env) {
		h.mkdir("p0")
		h.ok("p0/schemata", cacheName(h.p)+":0=3\n")
		h.fail("p0/mode", "exclusive\n", syscall.EINVAL, "=Schemata overlaps")
		if got := h.read("p0/mode"); got != "shareable\n" {
			h.t.Fatalf("mode %q", got)
		}
	}},
	{name: "exclusive-mode", rule: "after the default group is shrunk a group can become exclusive; bit_usage shows E", only: func(p *Profile) bool { return !isMPAM(p) }, run: func(h *env) {
		exclusiveSetup(h)
		if got := h.read("p0/mode"); got != "exclusive\n" {
			h.t.Fatalf("mode %q", got)
		}
		bu := h.read("info/" + cacheName(h.p) + "/bit_usage")
		want := "0=" + strings.Repeat("S", h.p.L3.CBMLen-2) + "EE"
		if !strings.HasPrefix(bu, want) {
			h.t.Fatalf("bit_usage %q want prefix %q", bu, want)
		}
	}},
	{name: "exclusive-impossible-on-mpam", rule: "MPAM marks all bits shareable, so any mask overlaps hardware use", only: isMPAM, run: func(h *env) {
		h.mkdir("p0")
		h.ok("p0/schemata", "L3:0=3;1=3\n")
		h.ok("schemata", "L3:0=fffc;1=fffc\n")
		h.fail("p0/mode", "exclusive\n", syscall.EINVAL, "=Schemata overlaps")
	}},
	{name: "overlap-with-exclusive", rule: "\"Overlaps with exclusive group\" for any other group's mask", only: func(p *Profile) bool { return !isMPAM(p) }, run: func(h *env) {
		exclusiveSetup(h)
		h.mkdir("p1")
		h.fail("p1/schemata", cacheName(h.p)+":0=1\n", syscall.EINVAL, "=Overlaps with exclusive group")
		h.fail("schemata", cacheName(h.p)+":0=1\n", syscall.EINVAL, "=Overlaps with exclusive group")
	}},
	{name: "new-group-avoids-exclusive", rule: "a new group's initial masks leave out exclusive bits", only: func(p *Profile) bool { return !isMPAM(p) }, run: func(h *env) {
		exclusiveSetup(h)
		h.mkdir("p1")
		if got := h.value("p1", cacheName(h.p), 0); got != hexw(h.p, fullMask(h.p)&^3) {
			h.t.Fatalf("p1 got %q", got)
		}
		if got := h.value("p1", cacheName(h.p), lastDom(h.p)); got != hexw(h.p, fullMask(h.p)&^3) {
			h.t.Fatalf("p1 last domain got %q", got)
		}
	}},
	{name: "new-group-first-run", rule: "a new group's initial mask is the lowest contiguous run of the free bits, also where sparse masks are accepted (cbm_ensure_valid)", only: func(p *Profile) bool { return !isMPAM(p) && p.L2 == nil }, run: func(h *env) {
		p := h.p
		h.mkdir("p0")
		for _, r := range []string{cacheName(p), "L3DATA"} {
			if r == "L3DATA" && !p.CDP {
				continue
			}
			h.ok("p0/schemata", allDoms(p, r, 0xc))
			h.ok("schemata", allDoms(p, r, 0x3))
		}
		h.ok("p0/mode", "exclusive\n")
		// Free: default's shareable 0x3 and the unused bits above 0xc; 0xc is exclusive.
		h.mkdir("p1")
		for _, d := range []int{0, lastDom(p)} {
			if got := h.value("p1", cacheName(p), d); got != hexw(p, 3) {
				h.t.Fatalf("p1 domain %d got %q, want %s", d, got, hexw(p, 3))
			}
		}
	}},
	{name: "exclusive-own-overlap", rule: "an exclusive group may not grow onto other groups' bits (\"Overlaps with other group\")", only: func(p *Profile) bool { return !isMPAM(p) }, run: func(h *env) {
		exclusiveSetup(h)
		h.fail("p0/schemata", cacheName(h.p)+":0=7\n", syscall.EINVAL, "=Overlaps with other group")
	}},
	{name: "cdp-peer-overlap", rule: "under CDP the overlap check covers the peer (CODE vs DATA) type", only: func(p *Profile) bool { return p.CDP }, run: func(h *env) {
		exclusiveSetup(h)
		h.mkdir("p1")
		h.fail("p1/schemata", "L3DATA:0=2\n", syscall.EINVAL, "=Overlaps with exclusive group")
		h.ok("p1/schemata", "L3CODE:0=10\nL3DATA:0=20\n")
	}},
	{name: "mode-unknown", rule: "\"Unknown or unsupported mode\"", run: func(h *env) {
		h.mkdir("g")
		h.fail("g/mode", "bogus\n", syscall.EINVAL, "=Unknown or unsupported mode")
		h.fail("g/mode", "pseudo-locked\n", syscall.EINVAL, "=Unknown or unsupported mode")
	}},
	{name: "pseudo-lock-refused", rule: "rdtgroup_locksetup_enter: \"Cannot pseudo-lock default group\", \"CDP enabled\", \"Pseudo-locking not supported\" (no prefetch-disable bits); arm64 has no pseudo-locking",
		only: func(p *Profile) bool { return !p.PseudoLock || p.CDP }, run: func(h *env) {
			h.mkdir("g")
			if isMPAM(h.p) {
				h.fail("g/mode", "pseudo-locksetup\n", syscall.EINVAL, "=Unknown or unsupported mode")
				return
			}
			h.fail("mode", "pseudo-locksetup\n", syscall.EINVAL, "=Cannot pseudo-lock default group")
			want := "=Pseudo-locking not supported"
			if h.p.CDP {
				want = "=CDP enabled"
			}
			h.fail("g/mode", "pseudo-locksetup\n", syscall.EINVAL, want)
			if got := h.read("g/mode"); got != "shareable\n" {
				h.t.Fatalf("mode %q", got)
			}
		}},
	{name: "mode-needs-newline", rule: "mode writes need the trailing newline", run: func(h *env) {
		h.mkdir("g")
		if err := h.fs.WriteFile("g/mode", []byte("shareable")); !errors.Is(err, syscall.EINVAL) {
			h.t.Fatalf("got %v", err)
		}
	}},
	{name: "out-of-closids", rule: "CLOSIDs = smallest num_closids of enabled resources; then \"Out of CLOSIDs\" (ENOSPC), or \"Out of RMIDs\" first where RMIDs are fewer (MPAM); rmdir frees one", run: func(h *env) {
		n, msg := closidsOf(h.p), "=Out of CLOSIDs"
		if h.p.Mon != nil && h.p.Mon.NumRMIDs < n {
			n, msg = h.p.Mon.NumRMIDs, "=Out of RMIDs"
		}
		for i := 1; i < n; i++ {
			h.mkdir(fmt.Sprintf("c%d", i))
		}
		h.mkdirFail("extra", syscall.ENOSPC, msg)
		h.rmdir("c1")
		h.mkdir("extra")
	}},
	{name: "out-of-rmids", rule: "num_rmids bounds CTRL_MON + MON groups; then \"Out of RMIDs\"", only: func(p *Profile) bool { return p.Mon != nil }, run: func(h *env) {
		for i := 1; i < h.p.Mon.NumRMIDs; i++ {
			h.mkdir(fmt.Sprintf("mon_groups/m%d", i))
		}
		h.mkdirFail("mon_groups/extra", syscall.ENOSPC, "=Out of RMIDs")
		h.mkdirFail("ctrl", syscall.ENOSPC, "=Out of RMIDs")
	}},
	{name: "mkdir-errors", rule: "existing names EEXIST; no groups inside info or groups' files", run: func(h *env) {
		h.mkdir("g")
		h.mkdirFail("g", syscall.EEXIST, "")
		h.mkdirFail("info", syscall.EEXIST, "")
		h.mkdirFail("info/x", syscall.EPERM, "")
		h.mkdirFail("g/x", syscall.EPERM, "")
		if h.p.Mon != nil {
			h.mkdirFail("mon_groups/mon_groups", syscall.EPERM, "")
			h.mkdirFail("g/mon_groups/mon_groups", syscall.EPERM, "")
		}
	}},
	{name: "rmdir-errors", rule: "info is not removable; missing groups ENOENT", run: func(h *env) {
		if err := h.fs.Rmdir("info"); !errors.Is(err, syscall.EPERM) {
			h.t.Fatalf("rmdir info: %v", err)
		}
		if err := h.fs.Rmdir("nope"); !errors.Is(err, syscall.ENOENT) {
			h.t.Fatalf("rmdir nope: %v", err)
		}
	}},
	{name: "write-too-long", rule: "kernfs takes one write of at most PAGE_SIZE (E2BIG beyond)", run: func(h *env) {
		h.mkdir("g")
		long := cacheName(h.p) + ":0=1" + strings.Repeat(";0=1", 1200) + "\n"
		if err := h.fs.WriteFile("g/schemata", []byte(long)); !errors.Is(err, syscall.E2BIG) {
			h.t.Fatalf("%d-byte write: %v, want E2BIG", len(long), err)
		}
	}},
	{name: "read-only-files", rule: "info files are read-only (EACCES on write)", run: func(h *env) {
		if err := h.fs.WriteFile("info/"+cacheName(h.p)+"/cbm_mask", []byte("1\n")); !errors.Is(err, syscall.EACCES) {
			h.t.Fatalf("got %v", err)
		}
	}},
	{name: "task-move", rule: "writing a PID moves the task; tasks lists it", run: func(h *env) {
		h.mkdir("a")
		h.ok("a/tasks", "100\n")
		h.ok("a/tasks", "101")
		if got := h.tasks("a/tasks"); got != "100,101" {
			h.t.Fatalf("tasks %q", got)
		}
		if strings.Contains(h.tasks("tasks"), "100") {
			h.t.Fatal("task still listed in the default group")
		}
	}},
	{name: "task-list-errors", rule: "\"Task list parsing error pid %s\", \"Invalid pid %d\", \"No task %d\" (ESRCH)", run: func(h *env) {
		h.mkdir("a")
		h.fail("a/tasks", "abc\n", syscall.EINVAL, "=Task list parsing error pid abc")
		h.fail("a/tasks", "-3\n", syscall.EINVAL, "=Invalid pid -3")
		h.fail("a/tasks", "5000000\n", syscall.ESRCH, "No task 5000000")
	}},
	{name: "task-comma-list-stops", rule: "comma lists move tasks in order; the first failure stops, earlier moves stay", run: func(h *env) {
		h.mkdir("a")
		h.fail("a/tasks", "100,5000000,101\n", syscall.ESRCH, "Error while processing task 5000000")
		if got := h.tasks("a/tasks"); got != "100" {
			h.t.Fatalf("tasks %q want 100", got)
		}
	}},
	{name: "task-into-foreign-mon", rule: "\"Can't move task to different control group\" for a MON group of another CTRL_MON", only: func(p *Profile) bool { return p.Mon != nil }, run: func(h *env) {
		h.mkdir("a")
		h.mkdir("b")
		h.mkdir("b/mon_groups/m")
		h.ok("a/tasks", "100\n")
		h.fail("b/mon_groups/m/tasks", "100\n", syscall.EINVAL, "Can't move task to different control group")
		if got := h.tasks("a/tasks"); got != "100" {
			h.t.Fatalf("a tasks %q", got)
		}
	}},
	{name: "task-into-own-mon", rule: "a task moves into a MON group of its CTRL_MON group; both list it", only: func(p *Profile) bool { return p.Mon != nil }, run: func(h *env) {
		h.mkdir("a")
		h.mkdir("a/mon_groups/m")
		h.ok("a/tasks", "100\n")
		h.ok("a/mon_groups/m/tasks", "100\n")
		if h.tasks("a/tasks") != "100" || h.tasks("a/mon_groups/m/tasks") != "100" {
			h.t.Fatal("task not listed in both")
		}
		h.ok("a/tasks", "100\n")
		if got := h.tasks("a/mon_groups/m/tasks"); got != "" {
			h.t.Fatalf("writing to the CTRL_MON group should take it out of the MON group, got %q", got)
		}
	}},
	{name: "rmdir-ctrl-moves-tasks", rule: "removing a CTRL_MON group moves its tasks and CPUs to the default group and removes its MON groups", only: func(p *Profile) bool { return p.Mon != nil }, run: func(h *env) {
		h.mkdir("a")
		h.mkdir("a/mon_groups/m")
		h.ok("a/tasks", "100,101\n")
		h.ok("a/mon_groups/m/tasks", "101\n")
		h.ok("a/cpus_list", "1-2\n")
		h.rmdir("a")
		root := h.tasks("tasks")
		if !strings.Contains(root, "100") || !strings.Contains(root, "101") {
			h.t.Fatalf("default group tasks %q", root)
		}
		if got := h.read("cpus_list"); got != fmt.Sprintf("0-%d\n", h.p.CPUs-1) {
			h.t.Fatalf("default group cpus %q", got)
		}
		h.mkdir("a")
		if _, err := h.fs.ReadDir("a/mon_groups/m"); !errors.Is(err, syscall.ENOENT) {
			h.t.Fatalf("MON group survived its parent: %v", err)
		}
		if h.tasks("a/tasks") != "" {
			h.t.Fatal("recreated group inherited tasks")
		}
	}},
	{name: "rmdir-mon-moves-tasks", rule: "removing a MON group moves its tasks to the parent CTRL_MON group", only: func(p *Profile) bool { return p.Mon != nil }, run: func(h *env) {
		h.mkdir("a")
		h.mkdir("a/mon_groups/m")
		h.ok("a/tasks", "100\n")
		h.ok("a/mon_groups/m/tasks", "100\n")
		h.rmdir("a/mon_groups/m")
		if got := h.tasks("a/tasks"); got != "100" {
			h.t.Fatalf("a tasks %q", got)
		}
		if c, m := h.e.TaskGroup(100); c != "a" || m != "" {
			h.t.Fatalf("task 100 in %q/%q, want a CTRL_MON a with no MON group", c, m)
		}
		h.mkdir("a/mon_groups/m2")
		if got := h.tasks("a/mon_groups/m2/tasks"); got != "" {
			h.t.Fatalf("new MON group has %q", got)
		}
	}},
	{name: "mon-group-move", rule: "a MON group moves to another CTRL_MON group with rename; its tasks take the new CLOSID", only: func(p *Profile) bool { return p.Mon != nil }, run: func(h *env) {
		h.mkdir("a")
		h.mkdir("b")
		h.mkdir("a/mon_groups/m")
		h.ok("a/tasks", "100,101\n")
		h.ok("a/mon_groups/m/tasks", "101\n")
		if err := h.fs.Rename("a/mon_groups/m", "b/mon_groups/m2"); err != nil {
			h.t.Fatalf("rename: %v (%s)", err, h.status())
		}
		if h.tasks("a/tasks") != "100" || h.tasks("b/tasks") != "101" || h.tasks("b/mon_groups/m2/tasks") != "101" {
			h.t.Fatalf("after move a=%q b=%q m2=%q", h.tasks("a/tasks"), h.tasks("b/tasks"), h.tasks("b/mon_groups/m2/tasks"))
		}
	}},
	{name: "mon-group-move-refused", rule: "\"Source must be a MON group\", \"Destination must be a mon_groups subdirectory\", \"Cannot move a MON group that monitors CPUs\" (EPERM)", only: func(p *Profile) bool { return p.Mon != nil }, run: func(h *env) {
		h.mkdir("a")
		h.mkdir("b")
		h.mkdir("a/mon_groups/m")
		rename := func(from, to, want string) {
			h.t.Helper()
			if err := h.fs.Rename(from, to); !errors.Is(err, syscall.EPERM) {
				h.t.Fatalf("rename %s %s: %v, want EPERM", from, to, err)
			}
			h.wantStatus(want)
		}
		rename("a", "b/mon_groups/a", "=Source must be a MON group")
		rename("a/mon_groups/m", "b/m", "=Destination must be a mon_groups subdirectory")
		h.ok("a/cpus_list", "1\n")
		h.ok("a/mon_groups/m/cpus_list", "1\n")
		rename("a/mon_groups/m", "b/mon_groups/m", "=Cannot move a MON group that monitors CPUs")
	}},
	{name: "cpus-move", rule: "CPUs written to a group leave their previous group; cpus reads a hex mask, cpus_list a list", run: func(h *env) {
		h.mkdir("a")
		h.ok("a/cpus", "f\n")
		if got := h.read("a/cpus_list"); got != "0-3\n" {
			h.t.Fatalf("cpus_list %q", got)
		}
		if got := h.read("cpus_list"); got != fmt.Sprintf("4-%d\n", h.p.CPUs-1) {
			h.t.Fatalf("default cpus_list %q", got)
		}
		h.mkdir("b")
		h.ok("b/cpus_list", "2-5\n")
		if got := h.read("a/cpus_list"); got != "0-1\n" {
			h.t.Fatalf("a after b took 2-3: %q", got)
		}
		h.ok("b/cpus_list", "\n")
		if got := h.read("cpus_list"); got != fmt.Sprintf("2-%d\n", h.p.CPUs-1) {
			h.t.Fatalf("dropped CPUs go to the default group: %q", got)
		}
	}},
	{name: "cpus-mask-format", rule: "cpus prints %*pb: 32-bit hex chunks separated by commas", run: func(h *env) {
		h.mkdir("a")
		h.ok("a/cpus_list", "0,4\n")
		n := h.p.CPUs
		var want string
		if n <= 32 {
			want = fmt.Sprintf("%0*x\n", (n+3)/4, 0x11)
		} else {
			// the first (most significant) chunk holds what is left after the full ones
			first := (n-1)%32 + 1
			want = strings.Repeat("0", (first+3)/4) + strings.Repeat(",00000000", (n-1)/32-1) + ",00000011\n"
		}
		if got := h.read("a/cpus"); got != want {
			h.t.Fatalf("cpus %q want %q", got, want)
		}
	}},
	{name: "cpus-default-cannot-drop", rule: "\"Can't drop CPUs from default group\"", run: func(h *env) {
		h.fail("cpus_list", "0\n", syscall.EINVAL, "=Can't drop CPUs from default group")
	}},
	{name: "cpus-bad", rule: "\"Bad CPU list/mask\" for syntax errors and CPUs beyond nr_cpu_ids", run: func(h *env) {
		h.mkdir("a")
		h.fail("a/cpus_list", "x\n", syscall.EINVAL, "=Bad CPU list/mask")
		h.fail("a/cpus_list", fmt.Sprintf("%d\n", h.p.CPUs), syscall.EINVAL, "=Bad CPU list/mask")
		h.fail("a/cpus", "g\n", syscall.EINVAL, "=Bad CPU list/mask")
	}},
	{name: "cpus-mon-subset", rule: "\"Can only add CPUs to mongroup that belong to parent\"", only: func(p *Profile) bool { return p.Mon != nil }, run: func(h *env) {
		h.mkdir("a")
		h.mkdir("a/mon_groups/m")
		h.ok("a/cpus_list", "0-1\n")
		h.fail("a/mon_groups/m/cpus_list", "2\n", syscall.EINVAL, "=Can only add CPUs to mongroup that belong to parent")
		h.ok("a/mon_groups/m/cpus_list", "1\n")
		h.ok("a/cpus_list", "0-3\n")
		if got := h.read("a/mon_groups/m/cpus_list"); got != "\n" {
			h.t.Fatalf("a CTRL_MON cpus write clears its MON groups' CPUs, got %q", got)
		}
	}},
	{name: "mon-data-layout", rule: "mon_data has one mon_L3_XX per L3 domain with the mon_features events", only: func(p *Profile) bool { return p.Mon != nil }, run: func(h *env) {
		h.mkdir("a")
		ents, err := h.fs.ReadDir("a/mon_data")
		if err != nil || len(ents) != h.p.L3.Domains || ents[0] != "mon_L3_00/" {
			h.t.Fatalf("mon_data %v %v", ents, err)
		}
		if got := h.read("a/mon_data/mon_L3_00/llc_occupancy"); got != "0\n" {
			h.t.Fatalf("fresh group occupancy %q", got)
		}
		want := "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n"
		if h.p.Mon.BMEC && h.p.Mon.Counters == 0 { // as libvirt's captured AMD tree lists them
			want = "llc_occupancy\nmbm_total_bytes\nmbm_total_bytes_config\nmbm_local_bytes\nmbm_local_bytes_config\n"
		}
		if got := h.read("info/L3_MON/mon_features"); got != want {
			h.t.Fatalf("mon_features %q", got)
		}
	}},
	{name: "threshold-bound", rule: "max_threshold_occupancy above the cache size is EINVAL", only: func(p *Profile) bool { return p.Mon != nil }, run: func(h *env) {
		if err := h.fs.WriteFile("info/L3_MON/max_threshold_occupancy", []byte(fmt.Sprintf("%d\n", h.p.L3.SizeBytes+1))); !errors.Is(err, syscall.EINVAL) {
			h.t.Fatalf("got %v", err)
		}
	}},
	{name: "offline-cpu", rule: "\"Can only assign online CPUs\"", inProcess: true, run: func(h *env) {
		h.mkdir("a")
		h.e.SetOnline(1, false)
		h.fail("a/cpus_list", "1\n", syscall.EINVAL, "=Can only assign online CPUs")
	}},
	{name: "no-permission", rule: "\"No permission to move task %d\" (EPERM)", inProcess: true, run: func(h *env) {
		h.e.opts.PIDMovable = func(pid int) bool { return pid != 7 }
		h.mkdir("a")
		h.fail("a/tasks", "7\n", syscall.EPERM, "No permission to move task 7")
	}},
	{name: "precedence", rule: "a task's own group beats its CPU's group, which beats the default group", inProcess: true, only: func(p *Profile) bool { return p.Mon != nil }, run: func(h *env) {
		h.mkdir("a")
		h.mkdir("b")
		h.ok("b/cpus_list", "3\n")
		h.ok("a/tasks", "100\n")
		ca := mustState(h).groupClosid("a")
		cb := mustState(h).groupClosid("b")
		if c, _ := h.e.Effective(100, 3); c != ca {
			h.t.Fatalf("task in a on b's CPU: closid %d want %d", c, ca)
		}
		if c, _ := h.e.Effective(200, 3); c != cb {
			h.t.Fatalf("default task on b's CPU: closid %d want %d", c, cb)
		}
		if c, _ := h.e.Effective(200, 0); c != 0 {
			h.t.Fatalf("default task on default CPU: closid %d", c)
		}
	}},
	{name: "rmid-limbo", rule: "freed RMIDs with occupancy above the threshold wait in limbo: mkdir sees EBUSY", inProcess: true, only: func(p *Profile) bool { return p.Mon != nil }, run: func(h *env) {
		src := &fakeSource{foot: map[int]uint64{}, traffic: map[int]uint64{}}
		h.e.SetSource(src)
		h.mkdir("mon_groups/hot")
		h.ok("mon_groups/hot/tasks", "100\n")
		src.foot[100] = h.p.L3.SizeBytes / 2
		h.e.Tick()
		for i := 2; i < h.p.Mon.NumRMIDs; i++ {
			h.mkdir(fmt.Sprintf("mon_groups/m%d", i))
		}
		h.rmdir("mon_groups/hot")
		h.mkdirFail("mon_groups/again", syscall.EBUSY, "=Out of RMIDs")
		src.traffic[100] = h.p.L3.SizeBytes // the task refills its lines under its new RMID
		h.e.Tick()
		h.mkdir("mon_groups/again")
	}},
}

type stateView struct{ s State }

func mustState(h *env) stateView { return stateView{h.e.State()} }
func (v stateView) groupClosid(p string) int {
	g, _ := v.s.Group(p)
	return g.CLOSID
}

type fakeSource struct {
	foot    map[int]uint64
	traffic map[int]uint64
}

func (f *fakeSource) Sample(pid, dom int) Sample {
	if dom != 0 {
		return Sample{CPU: -1}
	}
	return Sample{Footprint: f.foot[pid], TotalBytes: f.traffic[pid], LocalBytes: f.traffic[pid] / 2, CPU: -1}
}

// pidExists is the conformance world's process table: PIDs below 1,000,000 exist.
func pidExists(pid int) bool { return pid > 0 && pid < 1_000_000 }

// runConformance runs every applicable case for every conformance profile. mk returns
// the file surface for a fresh emulator of the profile.
func runConformance(t *testing.T, fileLevelOnly bool, mk func(t *testing.T, p *Profile) (fileOps, *Emulator)) int {
	n := 0
	for _, name := range ConformanceProfiles() {
		p, err := NamedProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range confCases {
			if c.only != nil && !c.only(p) || fileLevelOnly && c.inProcess {
				continue
			}
			n++
			t.Run(name+"/"+c.name, func(t *testing.T) {
				ops, e := mk(t, p)
				c.run(&env{t: t, p: p, fs: ops, e: e, fuse: fileLevelOnly})
			})
		}
	}
	return n
}

func TestConformanceInProcess(t *testing.T) {
	n := runConformance(t, false, func(t *testing.T, p *Profile) (fileOps, *Emulator) {
		e, err := New(p, Options{PIDExists: pidExists})
		if err != nil {
			t.Fatal(err)
		}
		return e.FS(), e
	})
	if n < 60 {
		t.Fatalf("only %d conformance cases ran, the suite promises at least 60", n)
	}
	t.Logf("%d conformance cases over %d profiles", n, len(ConformanceProfiles()))
}

// TestDocExclusiveExample replays "Example 4" of the kernel's resctrl documentation on
// its machine: L2 CAT with two instances and 8-bit masks (256 KiB per 2 bits).
func TestDocExclusiveExample(t *testing.T) {
	p := &Profile{Name: "doc-l2", Vendor: machine.Intel, CPUs: 4, Padded: true,
		L2: &CacheRes{Level: 2, Domains: 2, CBMLen: 8, MinCBMBits: 1, NumCLOSIDs: 8, SizeBytes: 1 << 20}}
	bothWays(t, p, func(h *env) {
		t := h.t
		_ = t
		if got := h.read("schemata"); got != "L2:0=ff;1=ff\n" {
			t.Fatalf("cat schemata: %q", got)
		}
		h.mkdir("p0")
		h.ok("p0/schemata", "L2:0=0x3;1=0x3\n")
		if got := h.read("p0/mode"); got != "shareable\n" {
			t.Fatalf("mode %q", got)
		}
		if err := h.fs.WriteFile("p0/mode", []byte("exclusive\n")); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("exclusive: %v", err)
		}
		if got := h.status(); !strings.EqualFold(got, "schemata overlaps") {
			t.Fatalf("last_cmd_status %q", got)
		}
		h.ok("schemata", "L2:0=0xfc;1=0xfc\n")
		h.ok("p0/mode", "exclusive\n")
		for f, want := range map[string]string{"cpus": "0\n", "mode": "exclusive\n", "schemata": "L2:0=03;1=03\n", "size": "L2:0=262144;1=262144\n"} {
			if got := h.read("p0/" + f); got != want {
				t.Errorf("p0/%s: %q want %q", f, got, want)
			}
		}
		h.mkdir("p1")
		for f, want := range map[string]string{"cpus": "0\n", "mode": "shareable\n", "schemata": "L2:0=fc;1=fc\n", "size": "L2:0=786432;1=786432\n"} {
			if got := h.read("p1/" + f); got != want {
				t.Errorf("p1/%s: %q want %q", f, got, want)
			}
		}
		if got := h.read("info/L2/bit_usage"); got != "0=SSSSSSEE;1=SSSSSSEE\n" {
			t.Errorf("bit_usage %q", got)
		}
		if err := h.fs.WriteFile("p1/schemata", []byte("L2:0=0x1;1=0x1\n")); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("overlap write: %v", err)
		}
		if got := h.status(); !strings.EqualFold(got, "overlaps with exclusive group") {
			t.Fatalf("last_cmd_status %q", got)
		}
	})
}

// TestMinCBMBitsTwo: Haswell server parts need two bits ("Need at least %d bits").
func TestMinCBMBitsTwo(t *testing.T) {
	m := machinetest.Get(t, "icx-4314-2s")
	p, err := ProfileFromMachine(m, "")
	if err != nil {
		t.Fatal(err)
	}
	p.L3.MinCBMBits = 2
	bothWays(t, p, func(h *env) {
		t := h.t
		_ = t
		h.mkdir("g")
		h.fail("g/schemata", "L3:0=1\n", syscall.EINVAL, "=Need at least 2 bits in the mask")
		h.ok("g/schemata", "L3:0=3\n")
	})
}

// TestExclusiveWithoutCAT: a platform with MBA only cannot have exclusive groups.
func TestExclusiveWithoutCAT(t *testing.T) {
	p := &Profile{Name: "mb-only", Vendor: machine.Intel, CPUs: 4,
		MB: &BWRes{Domains: 1, Min: 10, Max: 100, Gran: 10, DelayLinear: true, NumCLOSIDs: 8, NeedsLinear: true}}
	bothWays(t, p, func(h *env) {
		h.mkdir("g")
		h.fail("g/mode", "exclusive\n", syscall.EINVAL, "=Cannot be exclusive without CAT/CDP")
	})
}

func TestUnpaddedFormat(t *testing.T) {
	p, _ := NamedProfile("intel-newfmt")
	bothWays(t, p, func(h *env) {
		t := h.t
		h.mkdir("g")
		h.ok("g/schemata", "L3:0=3\nMB:0=50\n")
		if got := h.read("g/schemata"); got != "    L3:0=3;1=fff\n    MB:0=50;1=100\n" {
			t.Fatalf("got %q", got)
		}
	})
}

func TestAllNamedProfilesBuild(t *testing.T) {
	for _, n := range append(ProfileNames(), "skx-6138+cdp,mbps", "epyc-7543+smba,unpadded") {
		e, err := NewNamed(n, Options{})
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		ents, err := e.FS().ReadDir("info")
		if err != nil || len(ents) < 2 {
			t.Fatalf("%s: info %v %v", n, ents, err)
		}
	}
	if _, err := NamedProfile("nope"); err == nil {
		t.Fatal("unknown profile accepted")
	}
	if _, err := NamedProfile("icx-4314-2s+smba"); err == nil {
		t.Fatal("SMBA on Intel accepted")
	}
}

func TestStateMirrorsFiles(t *testing.T) {
	e, _ := NewNamed("intel", Options{})
	f := e.FS()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.Mkdir("a"))
	must(f.Mkdir("a/mon_groups/m"))
	must(f.WriteFile("a/schemata", []byte("L3:0=f0\nMB:1=30\n")))
	must(f.WriteFile("a/tasks", []byte("10,11\n")))
	must(f.WriteFile("a/mon_groups/m/tasks", []byte("11\n")))
	must(f.WriteFile("a/cpus_list", []byte("4-5\n")))
	st := e.State()
	a, ok := st.Group("a")
	if !ok || a.Schemata["L3"][0] != 0xf0 || a.Schemata["L3"][1] != 0xfff || a.Schemata["MB"][1] != 30 {
		t.Fatalf("state a: %+v", a)
	}
	if fmt.Sprint(a.Tasks) != "[10 11]" || fmt.Sprint(a.CPUs) != "[4 5]" || a.CLOSID == 0 {
		t.Fatalf("state a: %+v", a)
	}
	m, ok := st.Group("a/mon_groups/m")
	if !ok || fmt.Sprint(m.Tasks) != "[11]" || !m.IsMon || m.Ctrl != "a" || m.CLOSID != a.CLOSID {
		t.Fatalf("state m: %+v", m)
	}
	if c, mon := e.TaskGroup(11); c != "a" || mon != "a/mon_groups/m" {
		t.Fatalf("TaskGroup(11) = %q %q", c, mon)
	}
	g0 := st.Generation
	must(f.WriteFile("a/schemata", []byte("L3:0=f\n")))
	if e.Generation() <= g0 {
		t.Fatal("generation did not advance")
	}
	if err := f.WriteFile("a/schemata", []byte("L3:0=5\n")); err == nil {
		t.Fatal("bad write accepted")
	}
	g1 := e.Generation()
	_ = f.WriteFile("a/schemata", []byte("L3:0=5\n"))
	if e.Generation() != g1 {
		t.Fatal("rejected write advanced the generation")
	}
	e.Reset()
	if len(e.State().Groups) != 1 {
		t.Fatal("Reset left groups")
	}
}

// TestOccupancyDecays: a task moved to another group leaves its lines with the old
// RMID; they move over as its own traffic refills them (no jump).
func TestOccupancyDecays(t *testing.T) {
	e, _ := NewNamed("intel", Options{})
	f := e.FS()
	for _, d := range []string{"a", "b"} {
		if err := f.Mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	const foot = 8 << 20
	src := &fakeSource{foot: map[int]uint64{42: foot}, traffic: map[int]uint64{42: 0}}
	e.SetSource(src)
	if err := f.WriteFile("a/tasks", []byte("42\n")); err != nil {
		t.Fatal(err)
	}
	e.Tick()
	occ := func(g string) uint64 {
		b, err := f.ReadFile(g + "/mon_data/mon_L3_00/llc_occupancy")
		if err != nil {
			t.Fatal(err)
		}
		var v uint64
		fmt.Sscan(string(b), &v)
		return v
	}
	if occ("a") != foot || occ("b") != 0 {
		t.Fatalf("before move a=%d b=%d", occ("a"), occ("b"))
	}
	if err := f.WriteFile("b/tasks", []byte("42\n")); err != nil {
		t.Fatal(err)
	}
	if occ("a") != foot || occ("b") != 0 {
		t.Fatalf("right after move (no tick) a=%d b=%d: occupancy must not jump", occ("a"), occ("b"))
	}
	src.traffic[42] = foot / 4
	var seq []uint64
	for i := 0; i < 4; i++ {
		e.Tick()
		seq = append(seq, occ("a"))
		if occ("a")+occ("b") != foot {
			t.Fatalf("tick %d: a+b = %d, want the footprint %d", i, occ("a")+occ("b"), foot)
		}
	}
	if !sort.SliceIsSorted(seq, func(i, j int) bool { return seq[i] > seq[j] }) || seq[0] != foot*3/4 || seq[3] != 0 {
		t.Fatalf("old group's occupancy %v, want 3/4, 1/2, 1/4, 0 of %d", seq, foot)
	}
	// MBM: traffic goes to the group the task is in at each tick, cumulatively.
	b, _ := f.ReadFile("b/mon_data/mon_L3_00/mbm_total_bytes")
	if strings.TrimSpace(string(b)) != fmt.Sprint(foot) {
		t.Fatalf("b mbm_total_bytes %q want %d", b, foot)
	}
	// CTRL_MON reads include MON groups.
	if err := f.Mkdir("b/mon_groups/m"); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile("b/mon_groups/m/tasks", []byte("42\n")); err != nil {
		t.Fatal(err)
	}
	e.Tick()
	mb, _ := f.ReadFile("b/mon_groups/m/mon_data/mon_L3_00/mbm_total_bytes")
	bb, _ := f.ReadFile("b/mon_data/mon_L3_00/mbm_total_bytes")
	if strings.TrimSpace(string(mb)) != fmt.Sprint(foot/4) || strings.TrimSpace(string(bb)) != fmt.Sprint(foot+foot/4) {
		t.Fatalf("mon m=%q ctrl b=%q", mb, bb)
	}
}

func (o osOps) Rename(a, b string) error { return os.Rename(o.p(a), o.p(b)) }

// bothWays runs a file-level test on a fresh emulator in process and, where FUSE works,
// again through a mount with plain os calls.
func bothWays(t *testing.T, p *Profile, run func(h *env)) {
	t.Run("in-process", func(t *testing.T) {
		e, err := New(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		run(&env{t: t, p: p, fs: e.FS(), e: e})
	})
	t.Run("fuse", func(t *testing.T) {
		fuseOrSkip(t)
		e, err := New(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := Mount(e, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer m.Unmount()
		run(&env{t: t, p: p, fs: osOps{root: m.Dir}, e: e, fuse: true})
	})
}
