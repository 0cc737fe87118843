// The Adafruit Bluefruit LE UART: find the Nordic UART Service, connect, subscribe to TX, send a
// line on RX and print what comes back (the UART example sketch echoes it).
//
//   swift run bluefruit-uart                  # the simulated board
//   swift run bluefruit-uart hci0 "hello"     # a real one, through the kernel
import BLE

#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let transport = arguments.first ?? "sim"
let line = arguments.count > 1 ? arguments[1] : "hello, Bluefruit"
let uartService = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
let rx = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!  // we write
let tx = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!  // it notifies

func run() async throws(BLEError) -> Int32 {
    let adapter = try await Adapter.open(transport)
    var found: Advertisement?
    do {
        for try await advertisement in await adapter.scan(ScanOptions(services: [uartService], duration: .seconds(15))) {
            found = advertisement
            break
        }
    } catch {
        print("scan failed: \(error)")
    }
    guard let found else {
        print("no Nordic UART Service within 15 s")
        await adapter.close()
        return 1
    }
    let board = try await adapter.connect(to: found)
    print("connected to \(board.peer)")
    let received = try await board.subscribe(to: tx)
    let bytes = Array((line + "\n").utf8)
    // The UART takes what fits one Write Command at a time (ATT_MTU − 3 octets).
    let chunk = await board.mtu - 3
    for start in stride(from: 0, to: bytes.count, by: chunk) {
        try await board.write(Array(bytes[start..<min(start + chunk, bytes.count)]), to: rx, withResponse: false)
    }
    var echo: [UInt8] = []
    while echo.count < bytes.count, let notification = try await received.next(timeout: .seconds(5)) {
        echo += notification.value
    }
    print("sent:     \(line)")
    print("received: \(String(decoding: echo, as: UTF8.self).trimmingNewline)")
    await board.disconnect()
    await adapter.close()
    return echo == bytes ? 0 : 1
}

extension String {
    var trimmingNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}

do {
    exit(try await run())
} catch {
    print("bluefruit-uart: \(error)")
    exit(1)
}
