// The security policy lands here (issue 3).
