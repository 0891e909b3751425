package inputfile

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A device, a FIFO, a socket and a directory are refused by type — also behind a
// symlink — before anything is read; a file over the limit is refused by size; a
// regular file within it is read whole.
func TestRefusedByTypeAndSize(t *testing.T) {
	dir := t.TempDir()
	link := func(name, to string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	big := filepath.Join(dir, "big.yaml")
	os.WriteFile(big, make([]byte, 2*Document), 0o644)
	ok := filepath.Join(dir, "ok.yaml")
	os.WriteFile(ok, []byte("a: 1\n"), 0o644)
	for _, c := range []struct{ path, why string }{
		{link("zero.yaml", "/dev/zero"), "device"},
		{link("random.csv", "/dev/urandom"), "device"},
		{fifo, "named pipe"},
		{sock, "socket"},
		{link("d.yaml", dir), "directory"},
		{big, "more than"},
	} {
		start := time.Now()
		_, err := Read(c.path, Document)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("%s: %v, want a refusal naming it (%s)", c.path, err, c.why)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: refused after %v", c.path, d)
		}
	}
	if b, err := Read(ok, Document); err != nil || string(b) != "a: 1\n" {
		t.Fatalf("%q %v", b, err)
	}
	// a file that grows past the limit after the check
	f, err := Open(ok, 5)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := os.OpenFile(ok, os.O_APPEND|os.O_WRONLY, 0); err == nil {
		a.WriteString("b: 2\n")
		a.Close()
	}
	if _, err := io.ReadAll(f); !errors.Is(err, ErrRefused) {
		t.Fatalf("reading past the limit: %v", err)
	}
	f.Close()
}
