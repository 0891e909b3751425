// Package inputfile reads the files a user hands colo (benchmark YAML, policy options,
// profile and workload tables, run directories' manifests) with two guards: a path that
// is not a regular file — a device such as /dev/zero, a FIFO, a socket, a directory,
// also behind a symlink — is refused by its type before a byte is read, and a file
// larger than the kind's limit is refused with a clear error instead of being read
// into memory (a symlink to /dev/urandom or a runaway generator would otherwise run colo
// out of memory).
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Limits per kind of file: a benchmark or policy YAML, a JSON manifest and a journal
// record are small documents; tables (metrics/workloads CSV, exported data) may be large.
const (
	Document int64 = 1 << 20  // 1 MiB
	Table    int64 = 32 << 20 // 32 MiB
)

// ErrRefused marks every refusal (type or size): the input is bad, not colo.
var ErrRefused = errors.New("input refused")

// Error is a refused input file.
type Error struct {
	Path, Why string
}

func (e *Error) Error() string { return e.Path + ": " + e.Why }

// Is makes errors.Is(err, ErrRefused) true.
func (e *Error) Is(target error) bool { return target == ErrRefused }

// Check refuses a path that is not a regular file (following symlinks) or whose size
// exceeds limit.
func Check(path string, limit int64) (os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := check(path, st, limit); err != nil {
		return nil, err
	}
	return st, nil
}

func check(path string, st os.FileInfo, limit int64) error {
	m := st.Mode()
	switch {
	case m.IsRegular():
	case m.IsDir():
		return &Error{path, "is a directory, not a file"}
	case m&os.ModeCharDevice != 0 || m&os.ModeDevice != 0:
		return &Error{path, "is a device, not a regular file: refused (give a file)"}
	case m&os.ModeNamedPipe != 0:
		return &Error{path, "is a named pipe, not a regular file: refused (give a file)"}
	case m&os.ModeSocket != 0:
		return &Error{path, "is a socket, not a regular file: refused (give a file)"}
	default:
		return &Error{path, "is not a regular file: refused"}
	}
	if st.Size() > limit {
		return &Error{path, fmt.Sprintf("is %d bytes, more than the %d this kind of file may have", st.Size(), limit)}
	}
	return nil
}

// Read reads a regular file of at most limit bytes.
func Read(path string, limit int64) ([]byte, error) {
	f, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Open opens a regular file of at most limit bytes; reading past limit (a file that
// grew after the check) fails.
func Open(path string, limit int64) (io.ReadCloser, error) {
	if _, err := Check(path, limit); err != nil { // before open(2): a FIFO blocks in it
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat() // the file opened, not whatever the path names by now
	if err == nil {
		err = check(path, st, limit)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &limited{f: f, left: limit, path: path}, nil
}

type limited struct {
	f    *os.File
	left int64
	path string
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, _ := l.f.Read(one[:]); n > 0 {
			return 0, &Error{l.path, "grew past its size limit while being read"}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.f.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limited) Close() error { return l.f.Close() }
