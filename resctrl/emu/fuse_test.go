package emu

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"colo/internal/testenv"
)

// fuseOrSkip stops the test when FUSE cannot be used (no /dev/fuse, e.g. an unprivileged
// container): it fails in CI (CI=true) and skips with the reason elsewhere.
func fuseOrSkip(t testing.TB) {
	t.Helper()
	testenv.Need(t, "FUSE (/dev/fuse and a mount as root; apt-get install fuse3)", FUSEAvailable())
}

// mountFresh mounts one emulator per profile and resets it for every case.
type mountPool struct {
	t      *testing.T
	mounts map[string]*Mounted
	emus   map[string]*Emulator
}

func (mp *mountPool) get(t *testing.T, p *Profile) (fileOps, *Emulator) {
	e, ok := mp.emus[p.Name]
	if !ok {
		var err error
		e, err = New(p, Options{PIDExists: pidExists})
		if err != nil {
			t.Fatal(err)
		}
		dir := mp.t.TempDir()
		m, err := Mount(e, dir)
		if err != nil {
			mp.t.Fatalf("mount: %v", err)
		}
		mp.mounts[p.Name], mp.emus[p.Name] = m, e
	}
	e.Reset()
	return osOps{root: mp.mounts[p.Name].Dir}, e
}

func (mp *mountPool) close() {
	for _, m := range mp.mounts {
		if err := m.Unmount(); err != nil {
			mp.t.Errorf("unmount %s: %v", m.Dir, err)
		}
	}
}

// TestConformanceFUSE runs the file-level conformance cases through a real FUSE mount
// with plain os reads and writes.
func TestConformanceFUSE(t *testing.T) {
	fuseOrSkip(t)
	mp := &mountPool{t: t, mounts: map[string]*Mounted{}, emus: map[string]*Emulator{}}
	defer mp.close()
	n := runConformance(t, true, mp.get)
	if n < 60 {
		t.Fatalf("only %d file-level cases ran through FUSE", n)
	}
	t.Logf("%d file-level conformance cases through FUSE", n)
}

// TestFUSEShell drives the mount with the shell, like an administrator would.
func TestFUSEShell(t *testing.T) {
	fuseOrSkip(t)
	sh, err := exec.LookPath("bash") // dash reports every failed builtin write as "I/O error"
	if err != nil {
		testenv.Need(t, "bash", err)
	}
	e, _ := NewNamed("intel", Options{})
	dir := t.TempDir()
	m, err := Mount(e, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Unmount(); err != nil {
			t.Error(err)
		}
	}()
	run := func(script string) (string, error) {
		// Not cmd.Dir = dir: the forked child would chdir into the mount before exec,
		// while this process, which serves the mount, holds syscall.ForkLock waiting
		// for that exec; the FUSE request can then deadlock. bash changes directory
		// after exec instead.
		cmd := exec.Command(sh, "-c", "cd \"$0\" && "+script, dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("mkdir p0 && echo 'L3:0=f0' > p0/schemata && cat p0/schemata"); err != nil || out != "    L3:0=0f0;1=fff\n    MB:0=100;1=100\n" {
		t.Fatalf("shell: %q %v", out, err)
	}
	out, err := run("echo 'L3:0=f7' > p0/schemata")
	if err == nil || !strings.Contains(out, "write error: Invalid argument") {
		t.Fatalf("bad mask via shell: %q %v", out, err)
	}
	if out, _ := run("cat info/last_cmd_status"); out != "The mask f7 has non-consecutive 1-bits\n" {
		t.Fatalf("last_cmd_status %q", out)
	}
	if out, err := run("ls"); err != nil || !strings.Contains(out, "info") || !strings.Contains(out, "p0") || !strings.Contains(out, "schemata") {
		t.Fatalf("ls: %q %v", out, err)
	}
	if out, err := run("rmdir p0 && ls"); err != nil || strings.Contains(out, "p0") {
		t.Fatalf("rmdir: %q %v", out, err)
	}
	// flock(LOCK_EX) on the root works.
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("flock: %v", err)
	}
	g, _ := os.Open(dir)
	defer g.Close()
	if err := syscall.Flock(int(g.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != syscall.EWOULDBLOCK {
		t.Fatalf("second flock: %v, want EWOULDBLOCK", err)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// TestStableInodes: lstat, stat and fstat of one file give one inode number, twice
// (kernfs inodes are stable; pqos refuses a file whose numbers differ as "a symlink"),
// and distinct files have distinct numbers.
func TestStableInodes(t *testing.T) {
	fuseOrSkip(t)
	e, err := NewNamed("amd-genoa", Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m, err := Mount(e, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmount()
	seen := map[uint64]string{}
	for _, f := range []string{"info/L3_MON/num_rmids", "info/L3/cbm_mask", "schemata", "mon_data/mon_L3_14/llc_occupancy", "info"} {
		p := dir + "/" + f
		var a, b, c syscall.Stat_t
		if err := syscall.Lstat(p, &a); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Stat(p, &b); err != nil {
			t.Fatal(err)
		}
		fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Fstat(fd, &c)
		syscall.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		var again syscall.Stat_t
		syscall.Stat(p, &again)
		if a.Ino != b.Ino || b.Ino != c.Ino || c.Ino != again.Ino || a.Dev != c.Dev {
			t.Fatalf("%s: lstat %d, stat %d, fstat %d, stat again %d", f, a.Ino, b.Ino, c.Ino, again.Ino)
		}
		if o, dup := seen[a.Ino]; dup {
			t.Fatalf("%s and %s share inode %d", f, o, a.Ino)
		}
		seen[a.Ino] = f
		if a.Mtim != c.Mtim || a.Blksize != 4096 {
			t.Fatalf("%s: mtime %v/%v blksize %d", f, a.Mtim, c.Mtim, a.Blksize)
		}
	}
}
