package embedded

// publishCache applies a successful op's cache changes: a plain change
// drops every entry; a method that wrote keeps only its own class's
// entries; staged entries are installed unless a plain step ran.
func (t *txn) publishCache() {
	if !t.plain && len(t.writers) == 0 && len(t.cache) == 0 {
		return
	}
	e := t.entry
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	if t.plain {
		e.cache = nil
		return
	}
	for k := range e.cache {
		if len(t.writers) > 0 && !t.writers[className(k)] {
			delete(e.cache, k)
		}
	}
	for k, v := range t.cache {
		if e.cache == nil {
			e.cache = map[string]any{}
		}
		e.cache[k] = v
	}
}

func className(k string) string {
	for i := 0; i < len(k); i++ {
		if k[i] == 0 {
			return k[:i]
		}
	}
	return k
}
