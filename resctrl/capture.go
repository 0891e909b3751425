package resctrl

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// CaptureTree copies every file of a resctrl mount (through src: a real mount, a
// FUSE-mounted or in-process emulator) into dst, directories as directories: the
// `cp -r /sys/fs/resctrl` layout that emu.LoadTree replays. Files that cannot be read
// (write-only, or refused in the current state, such as io_alloc_cbm while io_alloc is
// disabled) are listed with their error in dst/../errors when errs is non-nil.
func CaptureTree(src FS, dst string, errs *[]string) error {
	var walk func(rel string) error
	walk = func(rel string) error {
		names, err := src.ReadDir(rel)
		if err != nil {
			return fmt.Errorf("capture: list %q: %w", rel, err)
		}
		if err := os.MkdirAll(filepath.Join(dst, rel), 0o755); err != nil {
			return err
		}
		for _, n := range names {
			p := strings.TrimSuffix(join(rel, n), "/")
			if isDirName(n) {
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			b, err := src.ReadFile(p)
			if err != nil {
				if errs != nil {
					*errs = append(*errs, fmt.Sprintf("resctrl/%s: %v", p, err))
				}
				continue
			}
			if err := os.WriteFile(filepath.Join(dst, filepath.FromSlash(p)), b, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	return walk("")
}

// cpuFiles are the files of /sys/devices/system/cpu a capture keeps: the CPU sets, the
// vendor, each CPU's topology and caches (relative paths, matched whole).
var cpuFiles = regexp.MustCompile(`^(online|possible|present|modalias|isolated|smt/control|` +
	`cpu[0-9]+/topology/[a-z_]+|cpu[0-9]+/cache/index[0-9]+/(level|type|size|ways_of_associativity|id|shared_cpu_list|shared_cpu_map|coherency_line_size|number_of_sets|physical_line_partition)|` +
	`cpu[0-9]+/cpufreq/cpuinfo_(max|min)_freq)$`)

// Capture writes a snapshot of a host for a bug report into dir: dir/resctrl (the mount
// at resctrlRoot, CaptureTree), dir/cpu (the topology and cache files of sysCPU,
// normally /sys/devices/system/cpu), dir/cpuinfo, dir/cmdline and dir/version (from
// procDir, normally /proc), dir/mounts (its resctrl lines) and dir/errors (what could
// not be read). Only resctrl must be readable; the rest is copied as far as it exists.
func Capture(dir, resctrlRoot, sysCPU, procDir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []string
	if err := CaptureTree(OSFS{Root: resctrlRoot}, filepath.Join(dir, "resctrl"), &errs); err != nil {
		return fmt.Errorf("%w (is resctrl mounted at %s? see colo doctor)", err, resctrlRoot)
	}
	_ = filepath.WalkDir(sysCPU, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(sysCPU, p)
		if d.IsDir() {
			// only cpuN, cpuN/topology, cpuN/cache[/indexN], cpuN/cpufreq, smt
			parts := strings.Split(rel, string(filepath.Separator))
			if rel != "." && !(len(parts) == 1 && (strings.HasPrefix(parts[0], "cpu") || parts[0] == "smt") ||
				len(parts) == 2 && (parts[1] == "topology" || parts[1] == "cache" || parts[1] == "cpufreq") ||
				len(parts) == 3 && parts[1] == "cache" && strings.HasPrefix(parts[2], "index")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !cpuFiles.MatchString(filepath.ToSlash(rel)) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, fmt.Sprintf("cpu/%s: %v", rel, err))
			return nil
		}
		out := filepath.Join(dir, "cpu", rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err == nil {
			_ = os.WriteFile(out, b, 0o644)
		}
		return nil
	})
	for _, f := range []string{"cpuinfo", "cmdline", "version", "mounts"} {
		b, err := os.ReadFile(filepath.Join(procDir, f))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", f, err))
			continue
		}
		if f == "mounts" {
			var keep []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, "resctrl") {
					keep = append(keep, l)
				}
			}
			b = []byte(strings.Join(keep, "\n") + "\n")
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "errors"), []byte(strings.Join(errs, "\n")+"\n"), 0o644)
}
