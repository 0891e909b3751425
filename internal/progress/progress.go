// Package progress shows what a long colo command is doing: a one-line progress bar with
// the rate and the time left, drawn only on a terminal.
//
// The command line (cmd/colo) makes one Reporter per command from its stderr and the
// --quiet flag and installs it with SetDefault; code anywhere below it then reports work
// without being handed a writer:
//
//	bar := progress.Start(int64(len(mixes)), "optimal search", progress.Unit("mixes"))
//	defer bar.Done()
//	for _, m := range mixes {
//		...
//		bar.Add(1)
//	}
//
// The contract, for callers:
//
//   - Start(total, label, opts...) begins a bar of total units (total ≤ 0: unknown, a
//     counter without a time left). It never fails and never returns an error to check.
//   - Add(n) adds n done units, Set(n) sets the done count, Update(done, total) sets both
//     (it fits callbacks like policy.Options.Progress), Describe(label) changes the label;
//     all are safe from several goroutines.
//   - Done() erases the bar (the terminal line is left clean for the results). Call it
//     exactly once, also on the error path (defer). Done on a finished bar does nothing.
//   - Every method is a no-op on a nil *Bar, and Start returns nil when nothing is drawn
//     (stderr is not a terminal, TERM=dumb, --quiet, or no Reporter installed), so progress
//     costs nothing in tests, pipes and CI logs: no control characters ever reach a file.
//   - A Start while another bar is running nests: the inner bar is drawn in the outer
//     one's place with the outer label as prefix ("compare: dcat › simulate"), and the
//     outer one comes back at its next Add after the inner Done.
//   - Wrap(stdout) returns a writer that erases the bar before each write, for results
//     printed while a bar runs on the same terminal.
//   - Println writes one whole line (the `colo run --interval` metric lines) above the
//     bar on a terminal and as plain text elsewhere; it writes even when bars are off.
//
// Bars are drawn by github.com/schollz/progressbar/v3 (throttled to 10 redraws a second).
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Reporter draws bars and lines on one writer (a command's stderr).
type Reporter struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool   // bars are drawn (w is a terminal and not quiet)
	stack []*Bar // running bars, innermost last
}

// New returns a Reporter writing to w. Bars are drawn only when w is a terminal (an *os.File
// or anything with Fd() on a tty), TERM is not "dumb" and quiet is false.
func New(w io.Writer, quiet bool) *Reporter {
	return &Reporter{w: w, on: !quiet && IsTerminal(w)}
}

// Force returns a Reporter that draws bars on w even when it is not a terminal (a
// --progress=on flag); New is the right choice everywhere else.
func Force(w io.Writer) *Reporter { return &Reporter{w: w, on: true} }

// IsTerminal reports whether w is a terminal that takes control characters.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

// Enabled reports whether r draws bars. A nil Reporter draws nothing.
func (r *Reporter) Enabled() bool { return r != nil && r.on }

var def atomic.Pointer[Reporter]

// throttle is the least time between two redraws (tests set 0 to see every Add).
var throttle = 100 * time.Millisecond

// SetThrottle sets the least time between two redraws and returns the previous one
// (default 100 ms). Tests of commands set 0 so that a pseudo-terminal sees every state.
func SetThrottle(d time.Duration) time.Duration {
	old := throttle
	throttle = d
	return old
}

// Refresh is how often a running bar is drawn again without an Add.
const Refresh = time.Second

// SetDefault installs r as the Reporter of the package-level Start and Println (nil: none).
func SetDefault(r *Reporter) { def.Store(r) }

// Default returns the installed Reporter (nil when none is installed).
func Default() *Reporter { return def.Load() }

// Start begins a bar on the default Reporter; see Reporter.Start.
func Start(total int64, label string, opts ...Option) *Bar {
	return Default().Start(total, label, opts...)
}

// Println writes one line on the default Reporter; see Reporter.Println.
func Println(a ...any) { Default().Println(a...) }

// Option adjusts a bar.
type Option func(*config)

type config struct{ unit string }

// Unit names what the bar counts ("runs", "mixes", "s"): the rate reads "12 mixes/s".
func Unit(u string) Option { return func(c *config) { c.unit = u } }

// Bar is one running bar. The zero of interest is nil: every method of a nil Bar does nothing.
type Bar struct {
	r     *Reporter
	pb    *progressbar.ProgressBar
	label string
	done  bool
	stop  chan struct{} // closes the redrawing goroutine
}

// Start begins a bar of total units labelled label; nil when r draws nothing.
func (r *Reporter) Start(total int64, label string, opts ...Option) *Bar {
	if !r.Enabled() {
		return nil
	}
	c := config{unit: "it"}
	for _, o := range opts {
		o(&c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	full := label
	if n := len(r.stack); n > 0 {
		outer := r.stack[n-1]
		_ = outer.pb.Clear()
		full = outer.label + " › " + label
	}
	if total <= 0 {
		total = -1
	}
	b := &Bar{r: r, label: full}
	b.pb = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(r.w),
		progressbar.OptionSetDescription(full),
		progressbar.OptionSetWidth(24),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(c.unit),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(throttle),
		progressbar.OptionSetSpinnerChangeInterval(0), // no drawing goroutine: every write happens under r.mu
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
	r.stack = append(r.stack, b)
	b.stop = make(chan struct{})
	go b.redraw()
	return b
}

// redraw draws the bar again every Refresh, so that the elapsed time and the time left
// move during a long step without an Add (a 50 s profile of one application).
func (b *Bar) redraw() {
	t := time.NewTicker(Refresh)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.r.mu.Lock()
			if !b.done && b.top() {
				_ = b.pb.Add64(0)
			}
			b.r.mu.Unlock()
		}
	}
}

// locked runs f under the reporter's lock unless b is nil or done.
func (b *Bar) locked(f func()) {
	if b == nil {
		return
	}
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	if !b.done {
		f()
	}
}

// drawing runs f under the lock when b is on screen (not done, the innermost bar).
func (b *Bar) drawing(f func()) {
	b.locked(func() {
		if b.top() {
			f()
		}
	})
}

// Add adds n done units.
func (b *Bar) Add(n int64) { b.drawing(func() { _ = b.pb.Add64(n) }) }

// Set sets the done count to n.
func (b *Bar) Set(n int64) { b.drawing(func() { _ = b.pb.Set64(n) }) }

// Update sets the done count and the total at once, for callbacks of the form
// func(done, total int64) such as policy.Options.Progress: opt.Progress = bar.Update.
func (b *Bar) Update(done, total int64) {
	b.drawing(func() {
		if total > 0 && total != b.pb.GetMax64() {
			b.pb.ChangeMax64(total)
		}
		_ = b.pb.Set64(min(done, b.pb.GetMax64()))
	})
}

// Describe changes the bar's label (kept under the outer bar's prefix when nested).
func (b *Bar) Describe(label string) {
	b.locked(func() {
		if i := strings.LastIndex(b.label, " › "); i >= 0 {
			label = b.label[:i+len(" › ")] + label
		}
		b.label = label
		if b.top() {
			b.pb.Describe(label)
		}
	})
}

// top reports whether b is the innermost running bar (the one on screen). Callers hold r.mu.
func (b *Bar) top() bool { return len(b.r.stack) > 0 && b.r.stack[len(b.r.stack)-1] == b }

// Done erases the bar. A second Done does nothing.
func (b *Bar) Done() {
	b.locked(func() {
		b.done = true
		close(b.stop)
		_ = b.pb.Exit()
		_ = b.pb.Clear()
		for i, s := range b.r.stack {
			if s == b {
				b.r.stack = append(b.r.stack[:i], b.r.stack[i+1:]...)
				break
			}
		}
	})
}

// Println writes the operands as one line (fmt.Sprintln) above the running bar, which is
// drawn again right after it. On a writer that is not a terminal the line is written as is.
func (r *Reporter) Println(a ...any) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var top *Bar
	if n := len(r.stack); n > 0 && r.on {
		top = r.stack[n-1]
		_ = top.pb.Clear()
	}
	fmt.Fprint(r.w, fmt.Sprintln(a...))
	if top != nil {
		_ = top.pb.RenderBlank()
	}
}

// Wrap returns a writer for results printed while a bar runs (a command's stdout on the
// same terminal): each Write first erases the bar, which comes back at its next update.
// Without bars it returns w itself.
func (r *Reporter) Wrap(w io.Writer) io.Writer {
	if !r.Enabled() {
		return w
	}
	return wrapped{r, w}
}

// Wrap wraps w on the default Reporter; see Reporter.Wrap.
func Wrap(w io.Writer) io.Writer { return Default().Wrap(w) }

type wrapped struct {
	r *Reporter
	w io.Writer
}

func (x wrapped) Write(p []byte) (int, error) {
	x.r.mu.Lock()
	defer x.r.mu.Unlock()
	if n := len(x.r.stack); n > 0 {
		_ = x.r.stack[n-1].pb.Clear()
	}
	return x.w.Write(p)
}
