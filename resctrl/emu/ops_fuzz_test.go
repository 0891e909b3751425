package emu

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// fuzzOp decodes one operation on the emulator from 3 bytes.
func fuzzOp(e *Emulator, op, a, b byte) (string, error) {
	ctrl := fmt.Sprintf("g%d", a%4)
	paths := []string{"", ctrl, ctrl + "/mon_groups/m" + fmt.Sprint(b%2), "mon_groups/m" + fmt.Sprint(b%2)}
	at := func(p, file string) string {
		if p == "" {
			return file
		}
		return p + "/" + file
	}
	target := paths[b%4]
	switch op % 7 {
	case 0:
		return "mkdir " + ctrl, e.Mkdir(ctrl)
	case 1:
		p := paths[2+b%2]
		return "mkdir " + p, e.Mkdir(p)
	case 2:
		p := paths[1+b%3]
		return "rmdir " + p, e.Rmdir(p)
	case 3:
		// one PID per write: a multi-PID write keeps the moves before a failure, as the kernel
		pid := 1 + int(a%10) // 9 and 10 do not exist
		s := fmt.Sprintf("%d\n", pid)
		return "tasks " + target + " " + s, e.WriteFile(at(target, "tasks"), []byte(s))
	case 4:
		s := fmt.Sprintf("L3:%d=%x\n", b%3, uint32(a)|uint32(b)<<8)
		if b&0x80 != 0 {
			s = fmt.Sprintf("MB:%d=%d\n", b%2, a)
		}
		p := paths[a%2]
		return "schemata " + p + " " + s, e.WriteFile(at(p, "schemata"), []byte(s))
	case 5:
		s := []string{"shareable\n", "exclusive\n", "pseudo-locksetup\n", "bogus\n"}[b%4]
		p := paths[a%2]
		return "mode " + p + " " + s, e.WriteFile(at(p, "mode"), []byte(s))
	default:
		s := fmt.Sprintf("%d-%d\n", a%8, a%8+b%4)
		return "cpus_list " + target + " " + s, e.WriteFile(at(target, "cpus_list"), []byte(s))
	}
}

// checkInvariants is what resctrl guarantees after any sequence of operations.
func checkInvariants(t *testing.T, st State, trace []string) {
	t.Helper()
	fail := func(f string, a ...any) {
		t.Fatalf("after %q: "+f, append([]any{trace}, a...)...)
	}
	closids, rmids := map[int]string{}, map[[2]int]string{}
	// Exclusive masks are disjoint, except after pseudo-locksetup: a group in it holds no
	// allocation yet and the kernel's overlap test skips it (__rdtgroup_cbm_overlaps), so
	// another group can become exclusive over its ways, and leaving it for shareable does
	// not test overlap again (rdtgroup_mode_write). From then on new groups inherit the
	// overlap too: __init_one_rdt_domain starts them with every shareable group's bits
	// (conformance case new-group-first-run), so the invariant is not asserted.
	pseudoLock := false
	for _, op := range trace {
		pseudoLock = pseudoLock || strings.HasPrefix(op, "mode ") && strings.HasSuffix(op, " pseudo-locksetup\n")
	}
	ctrlOf := map[int]string{} // task -> its control group
	for _, g := range st.Groups {
		if !g.IsMon {
			if o, dup := closids[g.CLOSID]; dup && g.CLOSID >= 0 {
				fail("CLOSID %d held by %q and %q", g.CLOSID, o, g.Path)
			}
			closids[g.CLOSID] = g.Path
			for _, x := range g.Tasks {
				if o, dup := ctrlOf[x]; dup {
					fail("task %d in control groups %q and %q", x, o, g.Path)
				}
				ctrlOf[x] = g.Path
			}
		}
		if g.CLOSID >= 0 && g.RMID >= 0 { // a pseudo-locksetup/-locked group holds none
			k := [2]int{g.CLOSID, g.RMID}
			if o, dup := rmids[k]; dup {
				fail("RMID %d (CLOSID %d) held by %q and %q", g.RMID, g.CLOSID, o, g.Path)
			}
			rmids[k] = g.Path
		}
	}
	for _, g := range st.Groups {
		if g.IsMon {
			for _, x := range g.Tasks {
				if ctrlOf[x] != g.Ctrl {
					fail("task %d in MON group %q but control group %q", x, g.Path, ctrlOf[x])
				}
			}
		}
		if g.IsMon || g.Mode != "exclusive" || pseudoLock {
			continue
		}
		for name, masks := range g.Schemata {
			if name != "L3" && name != "L3CODE" && name != "L3DATA" && name != "L2" {
				continue
			}
			for _, o := range st.Groups {
				if o.IsMon || o.Path == g.Path {
					continue
				}
				for d, m := range masks {
					if om := o.Schemata[name]; d < len(om) && om[d]&m != 0 {
						fail("exclusive %q %s domain %d mask %x overlaps %q's %x", g.Path, name, d, m, o.Path, om[d])
					}
				}
			}
		}
	}
}

// FuzzOperations drives the emulator with arbitrary sequences of mkdir, rmdir and writes to
// tasks, schemata, mode and cpus_list: it never panics, CLOSIDs and (CLOSID, RMID) pairs
// stay unique, each task is in one control group (and a MON group of that group only),
// exclusive masks stay disjoint from every other group's, and a failed operation changes
// nothing.
func FuzzOperations(f *testing.F) {
	f.Add([]byte{0, 1, 0, 4, 1, 3, 5, 1, 1, 3, 2, 1, 1, 0, 1, 2, 2, 1})
	f.Add([]byte{0, 0, 0, 4, 0, 0x0f, 5, 0, 1, 4, 0, 0xf0, 5, 0, 1})
	f.Add([]byte{0, 2, 0, 3, 9, 1, 3, 2, 1, 6, 2, 1, 2, 2, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 3*64 {
			ops = ops[:3*64]
		}
		for _, prof := range []string{"intel", "amd", "intel-bdw"} {
			e, err := NewNamed(prof, Options{PIDExists: func(pid int) bool { return pid >= 1 && pid <= 8 }})
			if err != nil {
				t.Fatal(err)
			}
			var trace []string
			for i := 0; i+2 < len(ops); i += 3 {
				before := e.State()
				what, err := fuzzOp(e, ops[i], ops[i+1], ops[i+2])
				trace = append(trace, what)
				after := e.State()
				if err != nil && !reflect.DeepEqual(before, after) {
					t.Fatalf("%s: failed %q (%v) changed the state", prof, what, err)
				}
				checkInvariants(t, after, trace)
			}
		}
	})
}

// Issue #13: on an emulator serving this host (colo resctrl emulate), a task write of a
// PID that does not exist fails as the kernel's: ESRCH, "No task N" in last_cmd_status,
// nothing moved.
func TestNoSuchTask(t *testing.T) {
	e, err := NewNamed("intel", Options{PIDExists: HostPIDExists})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Mkdir("g"); err != nil {
		t.Fatal(err)
	}
	const gone = 1 << 22 // above the default pid_max (4194304 is the 64-bit limit)
	before := e.State()
	err = e.WriteFile("g/tasks", []byte(fmt.Sprintf("%d\n", gone)))
	if !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("write of a missing PID: %v, want ESRCH", err)
	}
	st, _ := e.ReadFile("info/last_cmd_status")
	// the kernel's rdtgroup_tasks_write adds its own line after rdtgroup_move_task's
	if want := fmt.Sprintf("No task %d\nError while processing task %d\n", gone, gone); string(st) != want {
		t.Errorf("last_cmd_status %q, want %q", st, want)
	}
	if !reflect.DeepEqual(before, e.State()) {
		t.Error("the failed write changed the groups")
	}
	// an existing task (this process) moves
	if err := e.WriteFile("g/tasks", []byte(fmt.Sprintf("%d\n", os.Getpid()))); err != nil {
		t.Fatalf("moving this process: %v", err)
	}
}
