package reshard

// nextPrime returns the smallest prime >= n (n >= 2).
func nextPrime(n int) int {
	if n <= 2 {
		return 2
	}
	if n%2 == 0 {
		n++
	}
	for ; ; n += 2 {
		if isPrime(n) {
			return n
		}
	}
}

// prevPrime returns the largest prime <= n, or 2.
func prevPrime(n int) int {
	for ; n > 2; n-- {
		if isPrime(n) {
			return n
		}
	}
	return 2
}

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// DynamicShards is the shard count a dynamic reshard picks for objs
// objects by RGW's rule: a prime near 2 × objs / maxPerShard (room to
// double), at most maxShards. It returns 0 when no growth is due (objects
// per shard within maxPerShard, or already at the cap). Manager.Check
// sizes for the bucket's growth (TargetShards, Sizing).
func DynamicShards(objs uint64, cur, maxPerShard, maxShards int) int {
	return TargetShards(objs, 2*objs, cur, maxPerShard, maxShards)
}
