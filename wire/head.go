package wire

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// HopByHop are the headers a proxy does not forward (RFC 9110 7.6.1), plus
// the framing headers this proxy sets itself.
var HopByHop = map[string]bool{
	"Connection":          true,
	"Proxy-Connection":    true,
	"Keep-Alive":          true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Upgrade":             true,
}

// InConnection reports whether name is listed in the Connection header
// values (which makes it hop-by-hop too). It allocates nothing: it runs
// for every header of every request and response.
func InConnection(connection []string, name string) bool {
	for _, v := range connection {
		for v != "" {
			var tok string
			tok, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(strings.TrimSpace(tok), name) {
				return true
			}
		}
	}
	return false
}

// proxyOnly are request headers meant for the proxy, never forwarded:
// warcprox's control header, acted on by the front end, is not leaked to
// sites nor into request records.
var proxyOnly = map[string]bool{"Warcprox-Meta": true}

// IsUpgrade reports whether the client asks to switch protocols (WebSocket).
// h2c is not passed on: the origin would answer in HTTP/2 on the spliced
// connection, which is not recorded.
func IsUpgrade(h http.Header) bool {
	u := h.Get("Upgrade")
	return u != "" && InConnection(h["Connection"], "Upgrade") && !strings.Contains(strings.ToLower(u), "h2c")
}

// RequestHead appends to b the request line and headers sent upstream:
// hop-by-hop headers removed, Host first, the rest sorted, the framing
// header for the body as the client sent it.
// host is the Host header to send (the client's, or the target's when an
// HTTP/1.0 client sent none).
func RequestHead(b []byte, r *http.Request, host, requestURI string, upgrade bool, hasBody bool) []byte {
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, requestURI...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	conn := r.Header["Connection"]
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		if HopByHop[k] || proxyOnly[k] || k == "Host" || k == "Content-Length" || InConnection(conn, k) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range r.Header[k] {
			b = appendField(b, k, v)
		}
	}
	if upgrade {
		b = appendField(b, "Connection", "Upgrade")
		for _, v := range r.Header["Upgrade"] {
			b = appendField(b, "Upgrade", v)
		}
	}
	if hasBody {
		if r.ContentLength >= 0 {
			b = appendField(b, "Content-Length", strconv.FormatInt(r.ContentLength, 10))
		} else {
			b = appendField(b, "Transfer-Encoding", "chunked")
		}
	} else if r.ContentLength == 0 && (r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch) {
		b = appendField(b, "Content-Length", "0")
	}
	return append(b, "\r\n"...)
}

func appendField(b []byte, k, v string) []byte {
	b = append(b, k...)
	b = append(b, ": "...)
	b = append(b, v...)
	return append(b, "\r\n"...)
}
