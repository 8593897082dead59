import FuzzDriver
import PinpathFuzzing

@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { FuzzTarget.pins.fuzz(data, size) }

@_cdecl("FuzzPins_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv) { testOneInput($0, $1) }
}
