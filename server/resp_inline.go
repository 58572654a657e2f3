package server

// splitInline splits an inline command line into arguments the way Redis's
// sdssplitargs does, appending the argument bytes to arena and their
// (start, end) bounds to offs.
//
// Rules:
//   - arguments are separated by runs of blanks (' ', '\t', '\r', '\n',
//     '\v', '\f');
//   - "double quotes" allow the escapes \xHH (two hex digits), \n, \r, \t,
//     \b, \a, and \<c> for any other c (so \" and \\);
//   - 'single quotes' allow only \' ; any other backslash is literal;
//   - a quote may start in the middle of an argument (a"b c" is the one
//     argument "ab c"), but a closing quote must be followed by a blank or
//     the end of the line, so a quote always ends its argument;
//   - a pair of double quotes, or of single quotes, with nothing between
//     them is an empty argument.
//
// An unterminated quote or a closing quote followed by a non-blank is a
// *ProtocolError "unbalanced quotes in request".
func splitInline(line, arena []byte, offs []int) ([]byte, []int, error) {
	i := 0
	for {
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if i == len(line) {
			return arena, offs, nil
		}
		start := len(arena)
		inDouble, inSingle := false, false
	arg:
		for ; i < len(line); i++ {
			c := line[i]
			switch {
			case inDouble:
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					arena = append(arena, unhex(line[i+2])<<4|unhex(line[i+3]))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					arena = append(arena, unescape(line[i]))
				case c == '"':
					if i+1 < len(line) && !isBlank(line[i+1]) {
						return arena, offs, errUnbalanced()
					}
					inDouble = false
					i++
					break arg
				default:
					arena = append(arena, c)
				}
			case inSingle:
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					arena = append(arena, '\'')
				case c == '\'':
					if i+1 < len(line) && !isBlank(line[i+1]) {
						return arena, offs, errUnbalanced()
					}
					inSingle = false
					i++
					break arg
				default:
					arena = append(arena, c)
				}
			default:
				switch {
				case isBlank(c):
					break arg
				case c == '"':
					inDouble = true
				case c == '\'':
					inSingle = true
				default:
					arena = append(arena, c)
				}
			}
		}
		if inDouble || inSingle { // the line ended inside quotes
			return arena, offs, errUnbalanced()
		}
		offs = append(offs, start, len(arena))
	}
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// unescape maps the character after a backslash inside double quotes.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

func errUnbalanced() error { return &ProtocolError{Msg: "unbalanced quotes in request"} }
