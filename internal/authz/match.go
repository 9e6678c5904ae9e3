package authz

// wildMatch matches s against pattern, where '*' matches any run of
// characters (including none) and '?' any one character. It is linear in
// len(pattern)+len(s) for the common cases and never recurses, so hostile
// patterns cannot blow the stack (the classic greedy star backtracking).
func wildMatch(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
