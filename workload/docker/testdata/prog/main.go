// prog is a tiny static test workload for the Docker runtime tests.
package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: prog sleep|exit|spin|write|serve|dial|fork ...")
		os.Exit(64)
	}
	arg := func(i int) string {
		if len(os.Args) > i {
			return os.Args[i]
		}
		return ""
	}
	switch os.Args[1] {
	case "sleep":
		d, _ := time.ParseDuration(arg(2))
		time.Sleep(d)
	case "exit":
		fmt.Println("exiting with", arg(2))
		n, _ := strconv.Atoi(arg(2))
		os.Exit(n)
	case "spin": // burn CPU until killed
		x := 0
		for i := 0; ; i++ {
			x += i * i
			if x == -1 {
				fmt.Println(x)
			}
		}
	case "write": // write $MSG to a file, then sleep
		if err := os.WriteFile(arg(2), []byte(os.Getenv("MSG")), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		time.Sleep(time.Hour)
	case "serve":
		l, err := net.Listen("tcp", ":8080")
		if err != nil {
			os.Exit(1)
		}
		for {
			c, err := l.Accept()
			if err == nil {
				c.Write([]byte("ok"))
				c.Close()
			}
		}
	case "dial": // dial host:port until it answers (or 20 s)
		for i := 0; i < 200; i++ {
			c, err := net.DialTimeout("tcp", arg(2), time.Second)
			if err == nil {
				c.Close()
				os.Exit(0)
			}
			time.Sleep(100 * time.Millisecond)
		}
		os.Exit(7)
	case "fork": // start a child that sleeps, then sleep
		cmd := exec.Command(os.Args[0], "sleep", "1h")
		if err := cmd.Start(); err != nil {
			os.Exit(1)
		}
		time.Sleep(time.Hour)
	default:
		os.Exit(64)
	}
}
