package fileerr

import "testing"

func TestError(t *testing.T) {
	if got := (&Error{File: "b.yaml", Line: 7, Msg: `cores: "x" is not a number`}).Error(); got != `b.yaml:7: cores: "x" is not a number` {
		t.Errorf("with a line: %s", got)
	}
	if got := (&Error{File: "m.csv", Msg: "empty"}).Error(); got != "m.csv: empty" {
		t.Errorf("whole file: %s", got)
	}
}
