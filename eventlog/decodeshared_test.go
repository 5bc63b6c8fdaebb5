package eventlog

// DecodeEventFastShared is FastReader's decoding (strings cut out of one
// copy of the line), for the external tests.
func DecodeEventFastShared(line []byte) (*Event, *ParseError) { return decodeEventFast(line, true) }
