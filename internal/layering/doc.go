// Package layering holds no code: its test checks that imports between
// Cairn's packages only point down the layers of docs/design/overview.md
// (wiring -> HTTP -> semantics -> storage -> leaves).
package layering
