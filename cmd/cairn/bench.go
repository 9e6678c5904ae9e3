package main

import (
	"fmt"
	"os"
)

// runBench is replaced as the bench command lands; until then it says so plainly.
func runBench(args []string) int {
	fmt.Fprintln(os.Stderr, "cairn bench: not built yet")
	return 2
}
