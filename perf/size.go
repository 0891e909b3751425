package perf

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// unsafeSizeofAttr is sizeof(struct perf_event_attr) as x/sys/unix lays it out.
const unsafeSizeofAttr = unsafe.Sizeof(unix.PerfEventAttr{})
