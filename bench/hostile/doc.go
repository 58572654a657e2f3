// Package hostile measures how a running memrl server holds up against
// hostile clients while one honest client works: run it as
// `memrl bench hostile`.
//
// It starts no server of its own unless asked (--spawn): it targets the
// server at --addr, reading the server's memory from /proc/PID/status when
// --pid is given. All traffic goes to that address; Main refuses an address
// that is not loopback.
//
// A run has two phases. In the quiet phase (--quiet) only the honest client
// runs. In the attack phase (--duration) --hostile goroutines each loop
// over attacks, one connection at a time:
//
//	malformed  bad '*' or '$' headers, non-canonical counts, missing CRLF
//	hugelen    "$999999999", or the server's own limit (CONFIG GET
//	           proto-max-bulk-len), then a few bytes, then a stall or a close
//	bigfill    a bulk of the server's limit, then --fill bytes of it, then
//	           a stall
//	http       "POST / HTTP/1.1" with headers and the body "MEM.DROP honest"
//	random     1..4096 random bytes
//	halfframe  a frame cut short ("MEM.DROP hon"), then a stall
//	churn      up to 20 connects and disconnects, some after a PING
//	noread     commands with 16 KiB replies, sent without reading a reply
//
// Every attack is bounded in bytes and in time (--stall, and the end of the
// phase); a connection the attacker gives up on is closed with SO_LINGER 0
// so that the client side keeps no TIME_WAIT sockets. How each connection
// ended (closed by the server after an error reply, reset, still open when
// the attacker gave up, ...) is counted per kind.
//
// The honest client (client/ on go-redis, one connection, no retries) owns the
// collection "honest" (DIM 8, L2, INDEX FLAT, the ALPHA of --alpha); a
// collection of that name on the target server is dropped first. It
// adds memories with random vectors and binary payloads, rewards, gets and
// retrieves them, and checks every answer against its own model: the ids the
// collection assigns, the Q values after each reward (Q + α(r − Q)), visit
// counts, payloads, and that retrieving a stored vector returns that memory
// first. A reply that disagrees with the model, including an ERR reply to a
// command the model says must succeed, is a wrong answer. A network error or
// timeout is an honest error: the client then re-reads what it cannot know
// (did that reward apply?) before going on. If the collection vanishes (a
// hostile "MEM.DROP honest" got through), that is counted, and the client
// recreates it and starts its model afresh.
//
// After the attack phase the honest client checks that a fresh connection
// gets PONG, re-reads every memory of its model once more, and checks that
// MEM.INFO counts as many memories as the model holds. The report
// gives the honest latencies (p50, p99, max) of each phase, wrong answers,
// honest errors, whether the server is alive, the hostile connections per
// kind and ending, and the server's RSS (VmRSS at the start and end of the
// attack, the largest VmRSS sampled, and VmHWM). Main returns an error, so
// the command exits non-zero, if any honest answer was wrong or the server
// died.
package hostile
