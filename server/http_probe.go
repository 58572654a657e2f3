package server

import "bytes"

// Cross-protocol attacks.
//
// A web page cannot open a raw TCP connection, but it can make the browser
// send an HTTP request to any address, loopback included. The request's
// line and headers are not valid commands, but its body can be: a form
// POST whose body is "MEM.DROP victims\r\n" would run on a server that
// answers each unknown header line with an error and reads on. Redis
// closes the connection on the first "POST" or "Host:" it sees; memrl does
// the same for every line shaped like an HTTP request line or header, so
// nothing after it is read.

// httpMethods are the request-line verbs of HTTP/1.x (RFC 9110 and
// WebDAV's common ones), upper case.
var httpMethods = [][]byte{
	[]byte("GET"), []byte("HEAD"), []byte("POST"), []byte("PUT"), []byte("DELETE"),
	[]byte("CONNECT"), []byte("OPTIONS"), []byte("TRACE"), []byte("PATCH"),
	[]byte("PROPFIND"), []byte("MKCOL"), []byte("COPY"), []byte("MOVE"),
}

// looksLikeHTTP reports whether a command is part of an HTTP request rather
// than a RESP command:
//   - "POST ..." or "Host: ..." (Redis's own rule, kept for any arguments);
//   - any first word ending in ':' (a header line: "User-Agent: curl/8");
//     no command name ends in ':';
//   - an HTTP verb followed by a path or URL ("GET /", "PUT http://..."), or
//     by anything when the last word is an HTTP version ("GET x HTTP/1.1").
func looksLikeHTTP(args [][]byte) bool {
	name := args[0]
	if len(name) == 0 {
		return false
	}
	if name[len(name)-1] == ':' || bytes.EqualFold(name, []byte("POST")) {
		return true
	}
	if len(args) < 2 || !isHTTPMethod(name) {
		return false
	}
	target, last := args[1], args[len(args)-1]
	return bytes.HasPrefix(target, []byte("/")) || bytes.Contains(target, []byte("://")) ||
		target[0] == '*' && len(target) == 1 || hasPrefixFold(last, "HTTP/")
}

func isHTTPMethod(name []byte) bool {
	for _, m := range httpMethods {
		if bytes.EqualFold(name, m) {
			return true
		}
	}
	return false
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && bytes.EqualFold(b[:len(prefix)], []byte(prefix))
}
