package proxy

import "encoding/json"

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
