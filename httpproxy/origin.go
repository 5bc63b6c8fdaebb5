package httpproxy

import (
	"github.com/agent-trace-witness/witness/internal/httplocal"
	"net/http"
)

// refuseOrigin records a request refused for its Origin (not forwarded)
// and answers it 403.
func (p *recorder) refuseOrigin(w http.ResponseWriter, r *http.Request) {
	head := p.hash.head(r)
	x, err := p.cas.Request(head)
	if err == nil {
		err = p.cas.End(x, false, "not read: the request was refused for its Origin")
	}
	if err == nil {
		err = p.cas.Fail(x, "refused: Origin "+r.Header.Get("Origin")+" is not allowed; not forwarded", http.StatusForbidden)
	}
	if err != nil {
		p.fail(err)
	}
	httplocal.WriteOriginRefusal(w, r)
}
