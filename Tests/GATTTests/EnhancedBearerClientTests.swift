import ATT
import Bluetooth
import Testing

@testable import GATT

/// Issue 24: a GATT client with Enhanced ATT bearers beside its unenhanced one — procedures on
/// any free bearer; notifications, Multiple Handle Value Notifications and indications taken
/// on every bearer, an indication confirmed on the bearer that carried it; no Exchange MTU on
/// an enhanced bearer.
@Suite("GATT client: Enhanced ATT bearers")
struct EnhancedBearerClientTests {
    /// One more bearer between the pair's client and server, enhanced both ways (ATT_MTU `mtu`).
    static func addEnhancedBearer(to pair: ClientServerPair, mtu: Int = 100) async -> (client: ATTConnection, server: ATTConnection) {
        let (clientChannel, serverChannel) = InMemoryATTChannel.pair()
        let server = ATTConnection(
            channel: serverChannel, configuration: ATTBearer.Configuration(rxMTU: mtu, acceptsRequests: true, enhancedMTU: mtu),
            serverHandler: pair.server.handler)
        let client = ATTConnection(channel: clientChannel, configuration: ATTBearer.Configuration(rxMTU: mtu, enhancedMTU: mtu))
        await pair.client.addEnhancedBearers([client])
        return (client, server)
    }

    @Test func valuesComeOnAnyBearerAndIndicationsAreConfirmedWhereTheyCame() async throws {
        let pair = ClientServerPair(configuration: .manual)
        let enhanced = await Self.addEnhancedBearer(to: pair)
        #expect(await enhanced.client.mtu == 100)
        let battery = try await pair.client.subscribe(characteristic: SubscriptionTests.battery)
        var values = battery.makeAsyncIterator()
        try await SubscriptionTests.notify(pair.serverConnection, 0x21, [1])
        try await SubscriptionTests.notify(enhanced.server, 0x21, [2])
        try await enhanced.server.send(
            .multipleHandleValueNotification(MultipleHandleValueNotification(entries: [.init(handle: 0x21, value: [3])])))
        #expect(try await values.next()?.value == [1])
        #expect(try await values.next()?.value == [2])
        #expect(try await values.next()?.value == [3])
        // An indication on the enhanced bearer is confirmed on it: its indicate() returns.
        let keys = try await pair.client.subscribe(characteristic: SubscriptionTests.keys, indications: true)
        var keyValues = keys.makeAsyncIterator()
        let confirmed = Task { try await enhanced.server.indicate(HandleValueIndication(handle: 0x63, value: [9])) }
        #expect(try await keyValues.next()?.value == [9])
        try await confirmed.value
        await pair.client.close()
    }

    @Test func noExchangeMTUOnAnEnhancedBearer() async throws {
        let pair = ClientServerPair(configuration: .manual)
        let enhanced = await Self.addEnhancedBearer(to: pair)
        // Our side does not send one…
        await #expect(throws: ATTError.self) { _ = try await enhanced.client.exchangeMTU(517) }
        // …and a peer's (one that breaks the rule) is answered Request Not Supported.
        let (ours, theirs) = InMemoryATTChannel.pair()
        let bearer = ATTConnection(channel: ours, configuration: ATTBearer.Configuration(rxMTU: 100, enhancedMTU: 100))
        let peer = ATTConnection(channel: theirs)
        do {
            _ = try await peer.exchangeMTU(517)
            Issue.record("the exchange was answered")
        } catch {
            guard case .peerError(_, _, let code) = error else { throw error }
            #expect(code == .requestNotSupported)
        }
        #expect(await bearer.mtu == 100)
        await bearer.close()
        await peer.close()
        await pair.client.close()
    }

    @Test func concurrentReadsUseEveryBearer() async throws {
        let pair = ClientServerPair(configuration: .manual)
        let first = await Self.addEnhancedBearer(to: pair)
        let second = await Self.addEnhancedBearer(to: pair)
        let client = pair.client
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<30 { group.addTask { _ = try? await client.read(handle: 0x21) } }
        }
        #expect(await pair.clientConnection.requestsSent > 0)
        #expect(await first.client.requestsSent > 0)
        #expect(await second.client.requestsSent > 0)
        let total = await pair.clientConnection.requestsSent + first.client.requestsSent + second.client.requestsSent
        #expect(total == 30)
        // A bearer that closes leaves the pool; the others go on.
        await first.client.close()
        _ = try await client.read(handle: 0x21)
        await pair.client.close()
    }
}
