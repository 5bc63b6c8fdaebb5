package proxy

import (
	"encoding/json"
	"errors"
)

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
