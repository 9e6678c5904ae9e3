package objstore

import "strings"

func checkName(kind, s string, max int, allowEmpty bool) error {
	if s == "" && !allowEmpty {
		return Errorf(ErrInvalid, "empty %s", kind)
	}
	if len(s) > max {
		return Errorf(ErrInvalid, "%s longer than %d bytes", kind, max)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return Errorf(ErrInvalid, "%s contains a NUL byte", kind)
	}
	return nil
}

// ValidatePoolName reports ErrInvalid for an empty, over-long or NUL-holding name.
func ValidatePoolName(s string) error { return checkName("pool name", s, MaxPoolNameLen, false) }

// ValidateNamespace allows the empty (default) namespace.
func ValidateNamespace(s string) error { return checkName("namespace", s, MaxNamespaceLen, true) }

// ValidateObjectName reports ErrInvalid for a bad object name.
func ValidateObjectName(s string) error {
	return checkName("object name", s, MaxObjectNameLen, false)
}

// ValidateWriteOp checks every step's static arguments before anything is
// applied, so that bad input is rejected whole. Backends call it first.
func ValidateWriteOp(op *WriteOp) error {
	if op == nil || len(op.Steps) == 0 {
		return Errorf(ErrInvalid, "empty write op")
	}
	if len(op.Steps) > MaxOpSteps {
		return Errorf(ErrInvalid, "write op has %d steps, limit %d", len(op.Steps), MaxOpSteps)
	}
	for _, s := range op.Steps {
		if err := validateStep(s, true); err != nil {
			return err
		}
		if op.Fresh && !blindWrite(s) {
			return Errorf(ErrInvalid, "step %T not allowed in a fresh write op", s)
		}
	}
	return nil
}

// blindWrite reports whether s's effect does not depend on the object's
// prior state, so it may run in a Fresh op.
func blindWrite(s Step) bool {
	switch s := s.(type) {
	case *WriteFull, *SetXattr, *SetOmap, *SetOmapHeader, *SetMtime:
		return true
	case *Create:
		return !s.Exclusive
	}
	return false
}

// ValidateReadOp is ValidateWriteOp for reads.
func ValidateReadOp(op *ReadOp) error {
	if op == nil || len(op.Steps) == 0 {
		return Errorf(ErrInvalid, "empty read op")
	}
	if len(op.Steps) > MaxOpSteps {
		return Errorf(ErrInvalid, "read op has %d steps, limit %d", len(op.Steps), MaxOpSteps)
	}
	for _, s := range op.Steps {
		if err := validateStep(s, false); err != nil {
			return err
		}
	}
	return nil
}

func validXattr(name string) error { return checkName("xattr name", name, MaxXattrNameLen, false) }

// ValidateOmapKey rejects empty, over-long or NUL-holding omap keys.
func ValidateOmapKey(k string) error { return checkName("omap key", k, MaxOmapKeyLen, false) }

// ValidateOmapValue rejects values over MaxOmapValueLen.
func ValidateOmapValue(v []byte) error {
	if len(v) > MaxOmapValueLen {
		return Errorf(ErrTooBig, "omap value of %d bytes, limit %d", len(v), MaxOmapValueLen)
	}
	return nil
}

// ValidateXattr checks a name/value pair.
func ValidateXattr(name string, v []byte) error {
	if err := validXattr(name); err != nil {
		return err
	}
	if len(v) > MaxXattrValueLen {
		return Errorf(ErrTooBig, "xattr %q value of %d bytes, limit %d", name, len(v), MaxXattrValueLen)
	}
	return nil
}

func checkExtent(off, n int64) error {
	if off < 0 || n < 0 {
		return Errorf(ErrInvalid, "negative offset or length")
	}
	if off+n > MaxObjectSize {
		return Errorf(ErrTooBig, "extent ends at %d, object size limit %d", off+n, MaxObjectSize)
	}
	return nil
}

func validateStep(s Step, write bool) error {
	switch s := s.(type) {
	case *AssertExists, *AssertVersion:
		return nil
	case *CmpXattr:
		if !s.Op.Valid() || (s.Mode != CmpBytes && s.Mode != CmpU64) {
			return Errorf(ErrInvalid, "cmpxattr: bad op %d or mode %d", s.Op, s.Mode)
		}
		return validXattr(s.Name)
	case *OmapCmp:
		if !s.Op.Valid() {
			return Errorf(ErrInvalid, "omap_cmp: bad op %d", s.Op)
		}
		return ValidateOmapKey(s.Key)
	case *ExecStep:
		if s.Class == "" || s.Method == "" {
			return Errorf(ErrInvalid, "exec: empty class or method")
		}
		if len(s.In) > MaxClassInputLen {
			return Errorf(ErrTooBig, "exec %s.%s: input of %d bytes", s.Class, s.Method, len(s.In))
		}
		return nil
	}
	if write {
		switch s := s.(type) {
		case *Create, *Remove, *OmapClear, *SetMtime:
			return nil
		case *SetView:
			if err := checkName("view name", s.Name, MaxObjectNameLen, true); err != nil {
				return err
			}
			if s.Proj != "" && s.Name == "" {
				return Errorf(ErrInvalid, "view projection without a view")
			}
			if err := checkName("view projection", s.Proj, MaxObjectNameLen, true); err != nil {
				return err
			}
			return checkName("view bound", s.Below, MaxOmapKeyLen, true)
		case *WriteFull:
			return checkExtent(0, int64(len(s.Data)))
		case *Write:
			return checkExtent(s.Offset, int64(len(s.Data)))
		case *Append:
			return checkExtent(0, int64(len(s.Data)))
		case *Truncate:
			return checkExtent(s.Size, 0)
		case *SetXattr:
			return ValidateXattr(s.Name, s.Value)
		case *RmXattr:
			return validXattr(s.Name)
		case *SetOmap:
			for _, kv := range s.Pairs {
				if err := ValidateOmapKey(kv.Key); err != nil {
					return err
				}
				if err := ValidateOmapValue(kv.Value); err != nil {
					return err
				}
			}
			return nil
		case *RmOmapKeys:
			for _, k := range s.Keys {
				if err := ValidateOmapKey(k); err != nil {
					return err
				}
			}
			return nil
		case *OmapRmRange:
			if s.End != "" && s.End < s.Start {
				return Errorf(ErrInvalid, "omap_rm_range: end %q before start %q", s.End, s.Start)
			}
			return nil
		case *SetOmapHeader:
			return ValidateOmapValue(s.Header)
		}
	} else {
		switch s := s.(type) {
		case *StatStep, *GetXattrsStep, *OmapHeaderStep:
			return nil
		case *ReadStep:
			if s.Offset < 0 || s.Length < 0 {
				return Errorf(ErrInvalid, "read: negative offset or length")
			}
			return nil
		case *GetXattrStep:
			return validXattr(s.Name)
		case *OmapValsStep:
			if s.Max < 0 {
				return Errorf(ErrInvalid, "omap_get_vals: negative max")
			}
			return nil
		case *OmapKeysStep:
			if s.Max < 0 {
				return Errorf(ErrInvalid, "omap_get_keys: negative max")
			}
			return nil
		case *OmapValsByKeysStep:
			return nil
		}
	}
	kind := "read"
	if write {
		kind = "write"
	}
	return Errorf(ErrInvalid, "step %T not allowed in a %s op", s, kind)
}
