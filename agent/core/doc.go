// Package core is the agent's pure decision core: it is fed container arrivals and
// departures (Add, Remove), counter samples (Observe) and a clock (Tick's now), runs the
// configured scheduler — the same code `colo run` uses — and returns the state it wants
// (Plan: a target per container, system/default's masks). It reads the container labels'
// vocabulary (ParseRequest) and the --select terms (Selector). It does no I/O and reads no
// clock; internal/importgraph checks that it imports none.
package core
