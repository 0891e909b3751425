package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"colo/bench"

	"github.com/spf13/cobra"
)

// Signals: every command runs under one context (rootCmd.ExecuteContext), cancelled by
// the first SIGINT or SIGTERM. Commands that hold resources (containers, resctrl groups,
// a run directory) stop at their next step, clean up and return; colo then exits with
// 128+signal (130 for SIGINT, 143 for SIGTERM). A signal repeated within repeatWindow of
// the first is the same stop (GNU timeout signals colo and then its process group: two
// signals a moment apart; a hurried Ctrl-C pressed twice); a signal after that exits at
// once, after printing what the interrupted command said it would leave behind (pending).

// interruption is the state of signal handling for this process.
type interruption struct {
	mu      sync.Mutex
	sig     os.Signal // the first signal received, nil if none
	at      time.Time // when it arrived
	pending map[int]string
	nextID  int
	out     io.Writer
	exit    func(int)
	now     func() time.Time // nil: time.Now
}

// repeatWindow is how long after the first signal another one is the same stop.
const repeatWindow = time.Second

var intr = &interruption{pending: map[int]string{}, out: os.Stderr, exit: os.Exit}

// exitCode is the shell's code for a process ended by sig: 128 + its number.
func exitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// signalName is "SIGINT", "SIGTERM"...
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// watch cancels the returned context on the first SIGINT/SIGTERM and exits on the second.
// stop ends the watch.
func (in *interruption) watch(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				in.receive(sig, cancel)
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// receive handles one signal: the first cancels, the second exits.
func (in *interruption) receive(sig os.Signal, cancel context.CancelCauseFunc) {
	in.mu.Lock()
	now := time.Now
	if in.now != nil {
		now = in.now
	}
	t := now()
	first := in.sig == nil
	if first {
		in.sig, in.at = sig, t
	}
	repeat := !first && t.Sub(in.at) < repeatWindow
	var left []string
	for id := 0; id < in.nextID; id++ {
		if s, ok := in.pending[id]; ok {
			left = append(left, s)
		}
	}
	code := exitCode(in.sig)
	in.mu.Unlock()
	if first {
		fmt.Fprintf(in.out, "colo: %s: stopping and cleaning up (send it again to exit at once)\n", signalName(sig))
		cancel(errors.New(signalName(sig)))
		return
	}
	if repeat {
		fmt.Fprintf(in.out, "colo: %s within %v of the first: the same stop, still cleaning up\n", signalName(sig), repeatWindow)
		return
	}
	fmt.Fprintf(in.out, "colo: another signal (%s): exiting without cleaning up\n", signalName(sig))
	if len(left) == 0 {
		fmt.Fprintln(in.out, "colo: nothing registered as left behind")
	}
	for _, s := range left {
		fmt.Fprintln(in.out, "colo: left behind:", s)
	}
	in.exit(code)
}

// leave registers what a forced exit (second signal) would leave behind, until done is
// called.
func (in *interruption) leave(what string) (done func()) {
	in.mu.Lock()
	defer in.mu.Unlock()
	id := in.nextID
	in.nextID++
	in.pending[id] = what
	return func() {
		in.mu.Lock()
		delete(in.pending, id)
		in.mu.Unlock()
	}
}

// signalled returns the first signal received, nil if none.
func (in *interruption) signalled() os.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.sig
}

// signalIsStop annotates a command for which SIGINT/SIGTERM is the normal way to stop
// (a daemon such as colo agent): it exits 0 after a clean stop, not 128+signal.
var signalIsStop = map[string]string{"colo.signal-is-stop": "true"}

// normalStop says whether c treats a signal as its normal stop.
func normalStop(c *cobra.Command) bool {
	return c != nil && c.Annotations["colo.signal-is-stop"] == "true"
}

// leaveBehind registers what a forced exit would leave (see interruption.leave).
func leaveBehind(what string) (done func()) { return intr.leave(what) }

// signalContext is the command's context: cancelled by the first SIGINT/SIGTERM (the one
// process-wide watch installed by main). cancel releases it.
func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithCancel(ctx)
}

// exitStatus maps a command's outcome to colo's exit code: 0 ok, 1 runtime failure, 2 bad
// input or usage, 128+N after signal N (130 SIGINT, 143 SIGTERM). It prints err.
func exitStatus(err error, sig os.Signal, stderr io.Writer) int {
	if sig != nil {
		if err != nil && !errors.Is(err, bench.ErrInterrupted) && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "colo:", err)
		}
		fmt.Fprintf(stderr, "colo: interrupted by %s\n", signalName(sig))
		return exitCode(sig)
	}
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "colo:", err)
	var ue usageError
	if errors.As(err, &ue) || isUsageMessage(err) {
		return 2
	}
	return 1
}

// isUsageMessage recognises the usage errors cobra returns as plain errors before any
// command runs: an unknown command and flag-group rules (argument counts go through
// markUsage, flag syntax through SetFlagErrorFunc).
func isUsageMessage(err error) bool {
	m := err.Error()
	for _, p := range []string{"unknown command ", "required flag(s) ", "if any flags in the group ",
		"at least one of the flags in the group "} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

var markOnce sync.Once

// prepareTree wraps the argument checks of the whole command tree (markUsage) once, before
// the first command runs (every command is registered by then; init order across files
// would not guarantee it).
func prepareTree() {
	markOnce.Do(func() {
		rootCmd.InitDefaultCompletionCmd() // cobra adds it at Execute, after this walk
		markUsage(rootCmd)
	})
}

// markUsage makes every command's argument check return a bad-input error (exit 2), and
// makes every command that only groups others (no Run of its own) print its help when
// called bare and answer an unknown subcommand or extra argument with a usage error
// naming its commands (cobra would print the help and exit 0).
func markUsage(c *cobra.Command) {
	if !c.Runnable() && c.HasSubCommands() {
		c.Args = groupArgs
		c.Annotations = map[string]string{"colo.group": "true"}
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	if a := c.Args; a != nil {
		c.Args = func(cmd *cobra.Command, args []string) error { return badInput(a(cmd, args)) }
	}
	for _, sub := range c.Commands() {
		markUsage(sub)
	}
}

// stopped marks the first signal as the command's normal way to stop: a daemon (colo
// agent) that finished its clean shutdown then exits 0, not 128+N.
func (in *interruption) stopped() {
	in.mu.Lock()
	in.sig = nil
	in.mu.Unlock()
}

// groupArgs is the argument check of a command that only groups others: any argument left
// after cobra found no subcommand of that name is an unknown subcommand.
func groupArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var names []string
	for _, s := range cmd.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	hint := ""
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		hint = fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return fmt.Errorf("unknown command %q for %q%s; its commands: %s (see %s --help)",
		args[0], cmd.CommandPath(), hint, strings.Join(names, ", "), cmd.CommandPath())
}
