import CLibFuzzer

/// Hands the process to libFuzzer's driver with `callback` as the fuzz target.
///
/// SwiftPM links an executable target with its entry point renamed to `<Target>_main` (so that tests can
/// link executables), which leaves libFuzzer's own `main` unused: each target's `<Target>_main` calls this.
public func runLibFuzzer(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt {
    var argc = argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return LLVMFuzzerRunDriver(&argc, &argv, callback)
}
