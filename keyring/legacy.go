package keyring

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// LegacyEnv is the 0.1.0 environment variable holding a hex HMAC key.
const LegacyEnv = "ATW_WITNESS_KEY"

// Minimum legacy key sizes: signing needs a full 32-byte key; verifying
// accepts 16-31 byte keys so seals made by 0.1.0 with such keys still
// verify (see docs/design/legacy-keys.md).
const (
	MinLegacyVerifyBytes = 16
	minSignBytes         = SecretSize
)

// ParseLegacyKey decodes an ATW_WITNESS_KEY value: hex (either case), outer
// whitespace ignored. Unlike 0.1.0, whitespace between bytes is refused. min
// is the minimum key length in bytes.
func ParseLegacyKey(value string, min int) ([]byte, error) {
	s := strings.TrimSpace(value)
	if s == "" {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("%s is empty", LegacyEnv),
			"run 'witness key generate' for a keyring, or set ATW_WITNESS_KEY to 64 hex characters")
	}
	key, err := hex.DecodeString(s)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage,
			fmt.Errorf("%s must be hex (64 hex characters = 32 bytes); got %d characters that are not valid hex", LegacyEnv, len(s)),
			"generate one with 'witness key generate', or 'openssl rand -hex 32'")
	}
	if len(key) < min {
		return nil, exitcode.New(exitcode.Usage,
			fmt.Errorf("%s is too short: %d bytes, need at least %d", LegacyEnv, len(key), min),
			"new keys are 32 bytes (64 hex characters): 'openssl rand -hex 32', or use 'witness key generate'")
	}
	return key, nil
}

// LegacySigner returns an HMAC signer for an ATW_WITNESS_KEY value. Keys
// shorter than 32 bytes are refused for signing.
func LegacySigner(value string) (Signer, error) {
	key, err := ParseLegacyKey(value, minSignBytes)
	if err != nil {
		return nil, err
	}
	return &hmacSigner{key: key}, nil
}
