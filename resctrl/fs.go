package resctrl

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// FS is the file-level interface the client needs from a resctrl mount. Paths are
// relative to the mount root ("info/L3/cbm_mask", "colo.web/schemata"). Errors wrap
// the syscall.Errno the kernel returned (as *fs.PathError).
//
// Two implementations exist: OSFS (a real mount: /sys/fs/resctrl, a FUSE-mounted
// emulator, any directory) and the in-process emulator (resctrl/emu.(*Emulator).FS),
// which has the same paths, errors and formats without a mount.
type FS interface {
	ReadFile(name string) ([]byte, error)
	// WriteFile performs exactly one write(2) of data: resctrl treats each write as one
	// command.
	WriteFile(name string, data []byte) error
	Mkdir(name string) error
	Rmdir(name string) error
	// Rename moves a MON group directory to another mon_groups directory.
	Rename(oldName, newName string) error
	// ReadDir lists names sorted; directories carry a trailing "/".
	ReadDir(name string) ([]string, error)
	// Lock takes flock(LOCK_EX) on the mount root, as the kernel documentation asks of
	// multi-step changes.
	Lock() (unlock func() error, err error)
}

// OSFS is a resctrl mount (or any directory laid out like one) on the real filesystem.
type OSFS struct{ Root string }

func (o OSFS) path(name string) string { return filepath.Join(o.Root, filepath.FromSlash(name)) }

// ReadFile reads a file.
func (o OSFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(o.path(name)) }

// WriteFile opens name write-only and writes data with a single write(2).
func (o OSFS) WriteFile(name string, data []byte) error {
	f, err := os.OpenFile(o.path(name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// Mkdir creates a directory.
func (o OSFS) Mkdir(name string) error { return os.Mkdir(o.path(name), 0o755) }

// Rmdir removes a directory with rmdir(2) (never unlink: resctrl groups are directories).
func (o OSFS) Rmdir(name string) error {
	p := o.path(name)
	if err := syscall.Rmdir(p); err != nil {
		return &fs.PathError{Op: "rmdir", Path: p, Err: err}
	}
	return nil
}

// Rename renames with rename(2).
func (o OSFS) Rename(oldName, newName string) error {
	return os.Rename(o.path(oldName), o.path(newName))
}

// ReadDir lists a directory.
func (o OSFS) ReadDir(name string) ([]string, error) {
	ents, err := os.ReadDir(o.path(name))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name()
		if e.IsDir() {
			out[i] += "/"
		}
	}
	return out, nil
}

// Lock takes flock(LOCK_EX) on the root directory.
func (o OSFS) Lock() (func() error, error) {
	f, err := os.Open(o.Root)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "flock", Path: o.Root, Err: err}
	}
	return func() error {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}, nil
}

// String names the mount in messages.
func (o OSFS) String() string { return o.Root }

// errnoOf extracts the errno from an error chain (0 if none).
func errnoOf(err error) syscall.Errno {
	var en syscall.Errno
	for err != nil {
		if e, ok := err.(syscall.Errno); ok {
			return e
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return en
		}
		err = u.Unwrap()
	}
	return en
}

func isDirName(n string) bool { return strings.HasSuffix(n, "/") }
