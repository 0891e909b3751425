package emu

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Mounted is an emulator served as a real filesystem through FUSE.
type Mounted struct {
	Dir string
	srv *fuse.Server
}

var (
	probeOnce sync.Once
	probeErr  error
)

// FUSEAvailable says why a FUSE mount cannot work here (nil when it can): /dev/fuse
// must open, a non-root user needs fusermount3 or fusermount, and a trial mount must
// succeed (a container without CAP_SYS_ADMIN fails there). The answer is computed once.
func FUSEAvailable() error {
	probeOnce.Do(func() {
		if probeErr = fuseDevice(); probeErr != nil {
			return
		}
		dir, err := os.MkdirTemp("", "colo-fuse-probe")
		if err != nil {
			probeErr = err
			return
		}
		defer os.Remove(dir)
		e, err := NewNamed("intel", Options{})
		if err != nil {
			probeErr = err
			return
		}
		m, err := mount(e, dir)
		if err != nil {
			probeErr = fmt.Errorf("a trial FUSE mount failed (%v): run as root with CAP_SYS_ADMIN (docker: --device /dev/fuse --cap-add SYS_ADMIN)", err)
			return
		}
		probeErr = m.Unmount()
	})
	return probeErr
}

func fuseDevice() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("/dev/fuse unusable (%v): install the fuse3 package and run where /dev/fuse exists (docker: --device /dev/fuse --cap-add SYS_ADMIN)", err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			if _, err2 := exec.LookPath("fusermount"); err2 != nil {
				return fmt.Errorf("neither fusermount3 nor fusermount in PATH: install the fuse3 package")
			}
		}
	}
	return nil
}

// Mount serves e at dir (an existing empty directory) until Unmount. Every read,
// write, mkdir and rmdir goes to the emulator: nothing is cached by the kernel (zero
// entry/attribute timeouts, direct I/O), so `echo`, `cat`, the resctrl client and
// third-party tools see exactly the emulator's behaviour, including errno values and
// info/last_cmd_status. flock(2) on the mount root works as on any filesystem.
func Mount(e *Emulator, dir string) (*Mounted, error) {
	if err := FUSEAvailable(); err != nil {
		return nil, err
	}
	return mount(e, dir)
}

func mount(e *Emulator, dir string) (*Mounted, error) {
	zero := time.Duration(0)
	root := &fnode{e: e, path: ""}
	opts := &fs.Options{
		RootStableAttr: &fs.StableAttr{Mode: fuse.S_IFDIR, Ino: 1},
		MountOptions: fuse.MountOptions{
			FsName:        "resctrl",
			Name:          "colo-resctrl-emu",
			DisableXAttrs: true,
			DirectMount:   os.Geteuid() == 0,
			MaxWrite:      1 << 16,
		},
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
	}
	srv, err := fs.Mount(dir, root, opts)
	if err != nil {
		return nil, fmt.Errorf("emu: FUSE mount at %s: %w", dir, err)
	}
	return &Mounted{Dir: dir, srv: srv}, nil
}

// Unmount detaches the filesystem and waits for the server to stop.
func (m *Mounted) Unmount() error {
	err := m.srv.Unmount()
	if err != nil {
		// a busy mount (a shell cd'ed into it): retry lazily through fusermount
		for _, fm := range []string{"fusermount3", "fusermount"} {
			if p, lerr := exec.LookPath(fm); lerr == nil {
				if exec.Command(p, "-u", "-z", m.Dir).Run() == nil {
					err = nil
					break
				}
			}
		}
	}
	if err == nil {
		m.srv.Wait()
	}
	return err
}

// Wait blocks until the filesystem is unmounted (e.g. by fusermount -u).
func (m *Mounted) Wait() { m.srv.Wait() }

type fnode struct {
	fs.Inode
	e    *Emulator
	path string
}

var (
	_ fs.NodeLookuper  = (*fnode)(nil)
	_ fs.NodeGetattrer = (*fnode)(nil)
	_ fs.NodeSetattrer = (*fnode)(nil)
	_ fs.NodeReaddirer = (*fnode)(nil)
	_ fs.NodeOpener    = (*fnode)(nil)
	_ fs.NodeReader    = (*fnode)(nil)
	_ fs.NodeWriter    = (*fnode)(nil)
	_ fs.NodeMkdirer   = (*fnode)(nil)
	_ fs.NodeRmdirer   = (*fnode)(nil)
	_ fs.NodeRenamer   = (*fnode)(nil)
)

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return syscall.EIO
}

// inodeOf is the inode number of a path: a hash, the same on every lookup (kernfs
// inodes are stable, and careful clients such as pqos compare lstat, stat and fstat of
// one file to guard against symlink races). The root is 1.
func inodeOf(p string) uint64 {
	if p == "" {
		return 1
	}
	h := fnv.New64a()
	h.Write([]byte(p))
	return h.Sum64() | 1<<62 // never 0 or 1
}

// mountTime is the time every node reports (kernfs nodes keep their creation time;
// the emulator's tree is created at once).
var mountTime = time.Now()

func fillAttr(a *fuse.Attr, st Entry) {
	a.SetTimes(&mountTime, &mountTime, &mountTime)
	a.Blksize = 4096
	switch {
	case st.Dir:
		a.Mode = fuse.S_IFDIR | 0o755
		a.Nlink = 2
	case st.Writable:
		a.Mode = fuse.S_IFREG | 0o644
		a.Nlink = 1
	default:
		a.Mode = fuse.S_IFREG | 0o444
		a.Nlink = 1
	}
}

func (n *fnode) child(name string) string { return path.Join(n.path, name) }

func (n *fnode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := n.child(name)
	st, err := n.e.Stat(p)
	if err != nil {
		return nil, errnoOf(err)
	}
	fillAttr(&out.Attr, st)
	mode := uint32(fuse.S_IFREG)
	if st.Dir {
		mode = fuse.S_IFDIR
	}
	out.Ino = inodeOf(p)
	return n.NewInode(ctx, &fnode{e: n.e, path: p}, fs.StableAttr{Mode: mode, Ino: inodeOf(p)}), 0
}

func (n *fnode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	st, err := n.e.Stat(n.path)
	if err != nil {
		return errnoOf(err)
	}
	fillAttr(&out.Attr, st)
	out.Ino = inodeOf(n.path)
	return 0
}

// Setattr accepts truncation (the shell's O_TRUNC before `echo x > file`); resctrl
// files have no size to change.
func (n *fnode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return n.Getattr(ctx, f, out)
}

func (n *fnode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	ents, err := n.e.ReadDir(n.path)
	if err != nil {
		return nil, errnoOf(err)
	}
	out := make([]fuse.DirEntry, len(ents))
	for i, en := range ents {
		out[i] = fuse.DirEntry{Name: en.Name, Mode: fuse.S_IFREG, Ino: inodeOf(path.Join(n.path, en.Name))}
		if en.Dir {
			out[i].Mode = fuse.S_IFDIR
		}
	}
	return fs.NewListDirStream(out), 0
}

// handle holds a file's content from the first read on (like the kernel's seq_file),
// so a reader paging through it sees one consistent snapshot.
type handle struct {
	mu   sync.Mutex
	data []byte
	read bool
}

func (n *fnode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	st, err := n.e.Stat(n.path)
	if err != nil {
		return nil, 0, errnoOf(err)
	}
	if st.Dir {
		return nil, 0, syscall.EISDIR
	}
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY && !st.Writable {
		return nil, 0, syscall.EACCES
	}
	return &handle{}, fuse.FOPEN_DIRECT_IO, 0
}

func (n *fnode) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, _ := f.(*handle)
	if h == nil {
		h = &handle{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.read || off == 0 {
		b, err := n.e.ReadFile(n.path)
		if err != nil {
			return nil, errnoOf(err)
		}
		h.data, h.read = b, true
	}
	if off >= int64(len(h.data)) {
		return fuse.ReadResultData(nil), 0
	}
	end := min(int64(len(h.data)), off+int64(len(dest)))
	return fuse.ReadResultData(h.data[off:end]), 0
}

// Write hands one write(2) to the emulator as one command.
func (n *fnode) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if err := n.e.WriteFile(n.path, data); err != nil {
		return 0, errnoOf(err)
	}
	return uint32(len(data)), 0
}

func (n *fnode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := n.child(name)
	if err := n.e.Mkdir(p); err != nil {
		return nil, errnoOf(err)
	}
	fillAttr(&out.Attr, Entry{Name: name, Dir: true})
	out.Ino = inodeOf(p)
	return n.NewInode(ctx, &fnode{e: n.e, path: p}, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: inodeOf(p)}), 0
}

func (n *fnode) Rmdir(ctx context.Context, name string) syscall.Errno {
	return errnoOf(n.e.Rmdir(n.child(name)))
}

// Rename moves a MON group between mon_groups directories.
func (n *fnode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*fnode)
	if !ok || flags != 0 {
		return syscall.EINVAL
	}
	return errnoOf(n.e.Rename(n.child(name), np.child(newName)))
}
