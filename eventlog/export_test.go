package eventlog

// Hooks for the external tests (package eventlog_test), which build their
// corpora with capture's importer and appender and internal/synthlog:
// packages that import eventlog, so only an external test may use them.
var (
	EncodeEventFast = encodeEventFast
	EncodeEventSlow = encodeEventSlow
	SampleLog       = sampleLog
	GoodSigner      = goodSigner
	Trusted         = trusted
)

// FrozenTS is the ts of every sample event.
const FrozenTS = frozenTS
