// Package fileerr is the bad-input error of every file colo reads (benchmark YAML, profile
// CSV tables): the file, the line (0: the whole file) and what is wrong with which value,
// printed as the compilers do ("file:line: message") so that editors jump to it.
package fileerr

import "fmt"

// Error is a problem at a line of a file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}
