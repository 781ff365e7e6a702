// Command schedgate-logto runs a program with its standard output and standard error appended to a
// file, in its own place (exec: the same process, its signals and exit status its own).
//
//	schedgate-logto FILE PROGRAM [ARG...]
//
// A scheduler under test on kind runs through it, so that it writes its log to a file as a local
// scheduler process does: through the container runtime's log pipe, each line copied by the shim
// and rewritten by containerd, the scheduler's per-node lines cost more CPU than the scheduler.
// It is mounted into the scheduler's container from the kind node, so any scheduler image works.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: schedgate-logto FILE PROGRAM [ARG...]")
		os.Exit(2)
	}
	f, err := os.OpenFile(os.Args[1], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "schedgate-logto: %v\n", err)
		os.Exit(1)
	}
	program, err := exec.LookPath(os.Args[2])
	if err != nil {
		fmt.Fprintf(os.Stderr, "schedgate-logto: %v\n", err)
		os.Exit(127)
	}
	for _, fd := range []int{1, 2} {
		if err := syscall.Dup3(int(f.Fd()), fd, 0); err != nil {
			fmt.Fprintf(os.Stderr, "schedgate-logto: %s onto fd %d: %v\n", os.Args[1], fd, err)
			os.Exit(1)
		}
	}
	err = syscall.Exec(program, os.Args[2:], os.Environ())
	fmt.Fprintf(os.Stderr, "schedgate-logto: %s: %v\n", program, err) // into the file: stderr is it now
	os.Exit(127)
}
