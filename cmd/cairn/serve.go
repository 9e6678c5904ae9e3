package main

import (
	"fmt"
	"os"
)

// runServe is replaced as the serve command lands; until then it says so plainly.
func runServe(args []string) int {
	fmt.Fprintln(os.Stderr, "cairn serve: not built yet")
	return 2
}
