package main

import (
	"fmt"
	"os"
)

// runRados is replaced as the rados command lands; until then it says so plainly.
func runRados(args []string) int {
	fmt.Fprintln(os.Stderr, "cairn rados: not built yet")
	return 2
}
