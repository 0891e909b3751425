package machine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeHost writes a sysfs tree for sockets × cores × threads CPUs (socket-major numbering,
// hyperthread siblings after all cores as Linux does) whose L3 is shared by llcCores cores.
func fakeHost(t *testing.T, vendor string, sockets, cores, threads, llcCores int, l3Size string, ways int) string {
	t.Helper()
	root := t.TempDir()
	cpuDir := filepath.Join(root, "devices", "system", "cpu")
	n := sockets * cores * threads
	write(t, filepath.Join(cpuDir, "online"), fmt.Sprintf("0-%d", n-1))
	write(t, filepath.Join(cpuDir, "modalias"), "cpu:type:x86,"+vendor+"fam0006mod006A:feature:,0000\n")
	for c := 0; c < n; c++ {
		phys := c % (sockets * cores) // hyperthread siblings share a physical core
		pkg, core := phys/cores, phys%cores
		d := filepath.Join(cpuDir, fmt.Sprintf("cpu%d", c))
		write(t, filepath.Join(d, "topology", "physical_package_id"), fmt.Sprint(pkg))
		write(t, filepath.Join(d, "topology", "core_id"), fmt.Sprint(core))
		for i, lv := range []struct {
			level int
			typ   string
		}{{1, "Data"}, {1, "Instruction"}, {2, "Unified"}} {
			// Detect reads only level and type of the caches below the LLC.
			ix := filepath.Join(d, "cache", fmt.Sprintf("index%d", i))
			write(t, filepath.Join(ix, "level"), fmt.Sprint(lv.level))
			write(t, filepath.Join(ix, "type"), lv.typ)
		}
		ix := filepath.Join(d, "cache", "index3")
		write(t, filepath.Join(ix, "level"), "3")
		write(t, filepath.Join(ix, "type"), "Unified")
		write(t, filepath.Join(ix, "size"), l3Size)
		write(t, filepath.Join(ix, "ways_of_associativity"), fmt.Sprint(ways))
		write(t, filepath.Join(ix, "coherency_line_size"), "64")
		first := phys / llcCores * llcCores
		write(t, filepath.Join(ix, "shared_cpu_list"), fmt.Sprintf("%d-%d", first, first+llcCores-1))
	}
	return root
}

// mustDetect is Detect(sysfs, resctrlRoot), failing the test on an error.
func mustDetect(t *testing.T, sysfs, resctrlRoot string) *Profile {
	t.Helper()
	p, err := Detect(sysfs, resctrlRoot)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// resctrlInfo writes the files of a fake resctrl mount's info directory under root/resctrl
// and returns the mount's path. files is "PATH=VALUE ..." with PATH below info/, e.g.
// "L3/cbm_mask=7ff L3/num_closids=16".
func resctrlInfo(t *testing.T, root, files string) string {
	t.Helper()
	rc := filepath.Join(root, "resctrl")
	for _, f := range strings.Fields(files) {
		name, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("resctrlInfo: %q is not PATH=VALUE", f)
		}
		write(t, filepath.Join(rc, "info", filepath.FromSlash(name)), v)
	}
	return rc
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s+"\n"), 0o644); err != nil {
		if !os.IsNotExist(err) {
			t.Fatal(err)
		}
		// Create the directory only when missing: most files go into an existing one, and
		// MkdirAll's stat of every path element made the fake 64-CPU host slow to write.
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDetectIcelakeWithoutResctrl(t *testing.T) {
	t.Parallel()
	root := fakeHost(t, "ven0000", 2, 16, 2, 16, "24576K", 12)
	p := mustDetect(t, root, filepath.Join(root, "no-resctrl"))
	if p.Vendor != Intel || p.Sockets != 2 || p.CoresPerSocket != 16 || p.ThreadsPerCore != 2 {
		t.Fatalf("topology %s %d×%d×%d, want intel 2×16×2", p.Vendor, p.Sockets, p.CoresPerSocket, p.ThreadsPerCore)
	}
	if p.LLC.SizeBytes != 24<<20 || p.LLC.Ways != 12 || p.LLC.DomainsPerSocket != 1 || p.BytesPerWay() != 2<<20 {
		t.Fatalf("LLC %+v", p.LLC)
	}
	if p.MBA != nil || p.CAT.NumCLOSIDs != 1 {
		t.Fatalf("no resctrl: want no MBA and one CLOS, got %+v %+v", p.MBA, p.CAT)
	}
	if !strings.Contains(p.Description, "assumed") {
		t.Fatalf("description must say what was assumed: %q", p.Description)
	}
}

func TestDetectSkylakeResctrlWaysFromCBMMask(t *testing.T) {
	t.Parallel()
	root := fakeHost(t, "ven0000", 1, 20, 1, 20, "28160K", 11)
	p := mustDetect(t, root, resctrlInfo(t, root, "L3/cbm_mask=7ff L3/min_cbm_bits=1 L3/num_closids=16 L3/shareable_bits=600 L3_MON/num_rmids=176 MB/min_bandwidth=10 MB/bandwidth_gran=10 MB/num_closids=8 MB/delay_linear=1"))
	if p.LLC.Ways != 11 || p.FullMask() != 0x7ff || p.CAT.NumCLOSIDs != 16 || p.CAT.ShareableBits != 0x600 || p.CAT.SparseMasks {
		t.Fatalf("CAT %+v ways %d", p.CAT, p.LLC.Ways)
	}
	if p.MBA == nil || p.MBA.Min != 10 || p.MBA.Max != 100 || p.MBA.Gran != 10 || p.MBA.Unit != MBAPercent || !p.MBA.DelayLinear || p.MBA.NumCLOSIDs != 8 {
		t.Fatalf("MBA %+v", p.MBA)
	}
	if p.NumRMIDs != 176 {
		t.Fatalf("rmids %d", p.NumRMIDs)
	}
}

func TestDetectAMDPerCCXDomains(t *testing.T) {
	t.Parallel()
	root := fakeHost(t, "ven0002", 1, 32, 2, 8, "32768K", 16)
	p := mustDetect(t, root, resctrlInfo(t, root, "L3/cbm_mask=ffff L3/min_cbm_bits=0 L3/num_closids=16 L3/sparse_masks=1 MB/min_bandwidth=0 MB/bandwidth_gran=1 MB/num_closids=16"))
	if p.Vendor != AMD || p.LLC.DomainsPerSocket != 4 || p.CoresPerDomain() != 8 || p.LLCDomains() != 4 {
		t.Fatalf("want 4 CCX domains of 8 cores, got %d domains/socket (%+v)", p.LLC.DomainsPerSocket, p.LLC)
	}
	if !p.CAT.SparseMasks || p.CAT.MinCBMBits != 0 || p.MBA.Unit != MBAEighthGBps || p.MBA.Max != 2048 {
		t.Fatalf("AMD semantics: %+v %+v", p.CAT, p.MBA)
	}
}

func TestDetectErrorsNameTheFile(t *testing.T) {
	t.Parallel()
	root := fakeHost(t, "ven0000", 1, 2, 1, 2, "8M", 8)
	write(t, filepath.Join(root, "devices", "system", "cpu", "cpu1", "topology", "core_id"), "x1")
	_, err := Detect(root, "")
	if err == nil || !strings.Contains(err.Error(), "cpu1/topology/core_id") || !strings.Contains(err.Error(), "x1") {
		t.Fatalf("want an error naming cpu1/topology/core_id and the value, got %v", err)
	}
	if _, err := Detect(filepath.Join(root, "missing"), ""); err == nil {
		t.Fatal("missing sysfs root must be an error")
	}
	rc := filepath.Join(root, "resctrl")
	write(t, filepath.Join(rc, "info", "L3", "cbm_mask"), "f0f")
	write(t, filepath.Join(root, "devices", "system", "cpu", "cpu1", "topology", "core_id"), "1")
	if _, err := Detect(root, rc); err == nil || !strings.Contains(err.Error(), "cbm_mask") {
		t.Fatalf("non-contiguous cbm_mask: want an error naming cbm_mask, got %v", err)
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := ParseCPUList("0-2,5,7-8")
	if err != nil || fmt.Sprint(got) != "[0 1 2 5 7 8]" {
		t.Fatalf("got %v %v", got, err)
	}
	if s := FormatCPUList([]int{11, 0, 1, 2, 3, 8, 10, 3}); s != "0-3,8,10-11" {
		t.Errorf("FormatCPUList = %q, want 0-3,8,10-11", s)
	}
	for _, bad := range []string{"a", "3-1", "1-x", "-1", "1-", "0-99999999"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
}

// FuzzParseCPUList: no panics; whatever parses formats back to a list that parses to the
// same set of CPUs.
func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-3,8", "", "5", "1-1", "3-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseCPUList(s)
		if err != nil {
			return
		}
		again, err := ParseCPUList(FormatCPUList(l))
		if err != nil {
			t.Fatalf("%q -> %q does not parse", s, FormatCPUList(l))
		}
		seen := map[int]bool{}
		for _, c := range l {
			seen[c] = true
		}
		if len(again) != len(seen) {
			t.Fatalf("%q: %v -> %v", s, l, again)
		}
	})
}

// TestDetectThisHost runs on the real /sys of the machine running the tests.
func TestDetectThisHost(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/cpu"); err != nil {
		t.Skip("no sysfs on this host")
	}
	p, err := Detect("/sys", "/sys/fs/resctrl")
	if err != nil {
		t.Fatal(err)
	}
	cpus := p.Sockets * p.CoresPerSocket * p.ThreadsPerCore
	if cpus < 1 || p.LLC.SizeBytes <= 0 || p.LLC.Ways < 1 {
		t.Fatalf("implausible host %+v", p)
	}
	if data, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		l, _ := ParseCPUList(strings.TrimSpace(string(data)))
		if cpus != len(l) {
			t.Fatalf("detected %d CPUs, /sys/devices/system/cpu/online lists %d", cpus, len(l))
		}
	}
}
