package main

import (
	"fmt"
	"os"
)

// runAdmin is replaced as the admin command lands; until then it says so plainly.
func runAdmin(args []string) int {
	fmt.Fprintln(os.Stderr, "cairn admin: not built yet")
	return 2
}
