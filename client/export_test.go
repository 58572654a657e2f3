package client

// ParseErrorForTest exposes parseError to the external tests.
func ParseErrorForTest(s string) error { return parseError(s) }

// ConvertErrForTest exposes convertErr to the external tests.
func ConvertErrForTest(err error) error { return convertErr(err) }
