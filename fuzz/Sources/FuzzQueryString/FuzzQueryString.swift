import FuzzDriver
import PinpathFuzzing

@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { FuzzTarget.queryString.fuzz(data, size) }

@_cdecl("FuzzQueryString_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv) { testOneInput($0, $1) }
}
