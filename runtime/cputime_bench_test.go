package runtime

import (
	"os"
	"testing"
)

func BenchmarkCPUTimeRead(b *testing.B) {
	cg, err := CgroupOfPID(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	c, err := OpenCPUTime(cg)
	if err != nil {
		b.Skip(err)
	}
	defer c.Close()
	for i := 0; i < b.N; i++ {
		if _, err := c.Read(); err != nil {
			b.Fatal(err)
		}
	}
}
