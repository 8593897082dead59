// The HTTP core's public API speaks in the shared JSON value (parameters, decoded responses): a user who
// imports PinpathHTTP gets it without a second import.
@_exported import PinpathSupport
