import Foundation
import Testing
@testable import GATTClientCLI

@Suite struct JSONWriterTests {
    @Test func nestedDocumentIsValidJSONInOrder() throws {
        var json = JSONWriter()
        json.beginObject()
        json.field("kind", "att")
        json.field("frame", 12)
        json.field("rssi", -67)
        json.field("pdu", hex: [0x0A, 0xFF])
        json.field("ok", true)
        json.fieldNull("dir")
        json.beginArray("entries")
        json.beginObject(); json.field("handle", 1); json.endObject()
        json.beginObject(); json.field("handle", 2); json.field("name", "a\"b\\c\n\u{1}"); json.endObject()
        json.endArray()
        json.beginArray("handles"); json.element(1); json.element(0); json.endArray()
        json.field("lux", 12.5)
        json.endObject()
        let text = String(decoding: json.bytes, as: UTF8.self)
        #expect(text == #"{"kind":"att","frame":12,"rssi":-67,"pdu":"0aff","ok":true,"dir":null,"entries":[{"handle":1},{"handle":2,"name":"a\"b\\c\n\u0001"}],"handles":[1,0],"lux":12.5}"#)
        let parsed = try JSONSerialization.jsonObject(with: Data(json.bytes)) as? [String: Any]
        #expect(parsed?["rssi"] as? Int == -67)
    }
}
