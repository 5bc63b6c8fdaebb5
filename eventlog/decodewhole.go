package eventlog

// DecodeEventFastWhole decodes one event line exactly as DecodeEvent does:
// the same event, Wire included, and the same *ParseError on any input.
// It takes DecodeEventFast's quick path for the common case (canonical
// lines whose keys it knows), decoding the wire member too, and hands any
// other line to DecodeEvent. It is for readers that need the whole event
// (the report's pages show the cassette and the wire offsets).
func DecodeEventFastWhole(line []byte) (*Event, *ParseError) {
	e, err := decodeFastKeep(line, false, true)
	if err == nil && checkEnvelope(e) == nil {
		return e, nil
	}
	return DecodeEvent(line)
}

// SetFastWhole makes Next decode each line with DecodeEventFastWhole: the
// same events (Wire included) and the same errors as DecodeEvent gives,
// in a fraction of the time. Reading the lines does not change.
func (r *Reader) SetFastWhole(on bool) { r.whole = on }

// decodeWire decodes the wire member at s into a new *WireRef: the
// canonical form ({"cassette":...,"offsets":[...],"x":...}, plain keys,
// each at most once, no spaces, integers that fit) directly, any other
// value as decodeObject does (encoding/json, strictly, as DecodeEvent
// decodes it; null and other non-objects go to DecodeEvent), so the
// result is DecodeEvent's either way.
func decodeWire(s *scanner, dst **WireRef) error {
	start := s.i
	if w, ok := wireQuick(s); ok {
		*dst = w
		return nil
	}
	s.i = start
	return decodeObject(s, dst)
}

// wireQuick reads a canonical wire object, or says it cannot (s is then
// anywhere inside the value).
func wireQuick(s *scanner) (*WireRef, bool) {
	w := &WireRef{}
	_, err := s.members(func(key []byte) (uint32, error) {
		var err error
		switch string(key) {
		case "cassette":
			w.Cassette, err = s.str()
			return 1, err
		case "offsets":
			var ok bool
			if w.Offsets, ok = wireOffsets(s); !ok {
				return 0, errSlow
			}
			return 2, nil
		case "x":
			w.X, err = s.integer()
			return 4, err
		}
		return 0, nil
	})
	return w, err == nil
}

// wireOffsets reads an array of integers; [] is an empty slice, not nil,
// as encoding/json makes it.
func wireOffsets(s *scanner) ([]int64, bool) {
	if s.peek() != '[' {
		return nil, false
	}
	s.i++
	out := []int64{}
	if s.peek() == ']' {
		s.i++
		return out, true
	}
	for {
		n, err := s.integer()
		if err != nil {
			return nil, false
		}
		out = append(out, n)
		switch s.peek() {
		case ',':
			s.i++
			continue
		case ']':
			s.i++
			return out, true
		}
		return nil, false
	}
}
