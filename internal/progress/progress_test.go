package progress

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// openPTY returns the terminal end of a fresh pseudo-terminal and a function returning
// everything written to it so far (read from the controlling end by a goroutine).
func openPTY(t *testing.T) (*os.File, func() string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("pty.Open: %v", err)
	}
	var (
		mu   sync.Mutex
		buf  bytes.Buffer
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			mu.Lock()
			buf.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { tty.Close(); ptmx.Close(); <-done })
	read := func() string {
		// Closing the terminal end makes the reader see EOF once it drained the output.
		tty.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
	return tty, read
}

func TestMain(m *testing.M) {
	throttle = 0 // every Add draws: the tests see each state without waiting on the clock
	os.Exit(m.Run())
}

func work(r *Reporter) {
	b := r.Start(50, "search", Unit("mixes"))
	for range 50 {
		b.Add(1)
	}
	r.Println("interval line")
	inner := r.Start(3, "inner")
	inner.Add(3)
	inner.Done()
	b.Done()
	b.Done() // a second Done does nothing
}

func TestTerminalDrawsBarRateAndClears(t *testing.T) {
	t.Setenv("TERM", "xterm")
	tty, read := openPTY(t)
	r := New(tty, false)
	if !r.Enabled() {
		t.Fatal("a Reporter on a pseudo-terminal draws nothing")
	}
	work(r)
	out := read()
	for _, want := range []string{"search", "mixes/", "(49/50", "98%", "0s:0s]", "\r", "interval line", "search › inner"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
	// Done leaves the line blank: the last thing written is the erasing "\r   \r".
	if i := strings.LastIndex(out, "\r"); i < 0 || strings.TrimSpace(out[i:]) != "" {
		t.Errorf("the bar is not erased at the end: %q", out[max(0, len(out)-80):])
	}
}

func TestPipeAndQuietDrawNothing(t *testing.T) {
	t.Setenv("TERM", "xterm")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	tty, read := openPTY(t)
	for _, c := range []struct {
		name string
		w    io.Writer
		r    *Reporter
	}{
		{"pipe", pw, New(pw, false)},
		{"quiet terminal", tty, New(tty, true)},
	} {
		if c.r.Enabled() {
			t.Errorf("%s: bars enabled", c.name)
		}
		work(c.r)
	}
	pw.Close()
	piped, _ := io.ReadAll(pr)
	if string(piped) != "interval line\n" {
		t.Errorf("piped output = %q, want only the Println line", piped)
	}
	if out := strings.ReplaceAll(read(), "\r\n", "\n"); strings.ContainsAny(out, "\r\x1b") || !strings.Contains(out, "interval line") {
		t.Errorf("--quiet terminal output = %q, want the line without control characters", out)
	}
}

func TestDumbTerminalAndNil(t *testing.T) {
	t.Setenv("TERM", "dumb")
	tty, _ := openPTY(t)
	if New(tty, false).Enabled() {
		t.Error("TERM=dumb draws bars")
	}
	SetDefault(nil)
	b := Start(10, "x") // no Reporter installed: nil bar, every method a no-op
	b.Add(1)
	b.Set(2)
	b.Describe("y")
	b.Done()
	Println("nothing")
	if b != nil {
		t.Error("Start without a Reporter returned a bar")
	}
}

func TestConcurrentAdds(t *testing.T) {
	t.Setenv("TERM", "xterm")
	tty, read := openPTY(t)
	r := New(tty, false)
	b := r.Start(400, "parallel")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				b.Add(1)
			}
		})
	}
	wg.Wait()
	b.Done()
	if out := read(); !strings.Contains(out, "(399/400") {
		t.Errorf("4×100 concurrent Adds did not reach 399/400 (the full bar is erased at once): %q", out[max(0, len(out)-200):])
	}
}

func TestUpdateCallback(t *testing.T) {
	t.Setenv("TERM", "xterm")
	tty, read := openPTY(t)
	b := New(tty, false).Start(0, "optimal") // total unknown until the first callback
	progressFn := b.Update                   // as policy.Options.Progress
	for d := range int64(10) {
		progressFn(d, 20)
	}
	progressFn(25, 20) // past the total: clamped
	b.Done()
	if out := read(); !strings.Contains(out, "(9/20") || !strings.Contains(out, "45%") {
		t.Errorf("Update(done, 20) did not draw 9/20 at 45%%: %q", out)
	}
}

func TestForceDrawsOnAPipe(t *testing.T) {
	var buf bytes.Buffer
	b := Force(&buf).Start(4, "forced")
	b.Add(2)
	b.Done()
	if !strings.Contains(buf.String(), "(2/4") {
		t.Errorf("Force did not draw on a buffer: %q", buf.String())
	}
}

// SetThrottle is exported for the command line's tests: they run whole commands against a
// pseudo-terminal and must see every state without waiting on the clock.
func TestSetThrottle(t *testing.T) {
	old := SetThrottle(5 * time.Second)
	defer SetThrottle(old)
	if old != 0 {
		t.Fatalf("TestMain set 0, SetThrottle returned %v", old)
	}
}
