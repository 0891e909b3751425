package workload

import "testing"

func BenchmarkCPUTimeRead(b *testing.B) {
	c, err := OpenCPUTime(selfCgroup(b))
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
