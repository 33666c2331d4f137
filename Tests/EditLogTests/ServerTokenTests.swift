import EditLog
import EditLogServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Tokens wherever ArcGIS clients send them: the `token` parameter in the query string or in the body,
/// `Authorization: Bearer`, `X-Esri-Authorization: Bearer` and the `agstoken` cookie; each with a GET query,
/// a form POST `applyEdits` and a multipart `addAttachment`; each with a valid, a wrong and a missing token.
/// A refusal is ArcGIS's: HTTP 200 and `{"error":{"code":498|499,…}}` (never a bare 401), and writes nothing.
@Suite("Feature service token transports")
struct ServerTokenTests {
    static let base = ServedLog.base
    static let trees = try! Fixture.features("Trees")

    enum Transport: String, CaseIterable {
        case queryParameter, bodyParameter, bearer, esriBearer, cookie
    }

    enum Kind: String, CaseIterable {
        /// `/0/query`: a GET (a form POST when the token travels in the body, as clients send long queries).
        case query
        /// `/0/applyEdits`, form-urlencoded.
        case applyEdits
        /// `/0/2/addAttachment`, multipart/form-data.
        case addAttachment
    }

    enum Token: String, CaseIterable {
        case valid, wrong
        /// The transport is there but empty (`token=`, `Bearer `, `agstoken=`): absent, as on ArcGIS.
        case empty
        /// No token anywhere.
        case absent
    }

    /// Sends one request of `kind` with the token `value` (nil: none) in `transport`.
    static func send(_ client: any TestClientProtocol, _ kind: Kind, _ transport: Transport, _ value: String?, row: Int) async throws -> ServiceResponse {
        var headers: HTTPFields = [.userAgent: "TokenMatrix/1.0"]
        var queryToken = ""
        var bodyToken: [(String, String)] = []
        if let value {
            switch transport {
            case .queryParameter: queryToken = "&" + formEncode([("token", value)])
            case .bodyParameter: bodyToken = [("token", value)]
            case .bearer: headers[.authorization] = "Bearer \(value)"
            case .esriBearer: headers[HTTPFields.Element.Name("X-Esri-Authorization")!] = "Bearer \(value)"
            case .cookie: headers[.cookie] = "agstoken=\(value)"
            }
        }
        func answer(_ r: TestResponse) -> ServiceResponse {
            let bytes = Array(r.body.readableBytesView)
            return ServiceResponse(status: r.status, json: (try? JSONParser.parse(bytes)) ?? .null, contentType: r.headers[.contentType],
                                   text: String(decoding: bytes, as: UTF8.self))
        }
        switch kind {
        case .query:
            let form = [("where", "1=1"), ("outFields", "OBJECTID"), ("resultRecordCount", "3"), ("f", "json")]
            if transport == .bodyParameter {
                return try await client.postForm(base + "/0/query?f=json" + queryToken, form + bodyToken, headers: headers)
            }
            return try await client.getJSON(base + "/0/query" + queryString(form) + queryToken, headers: headers)
        case .applyEdits:
            let form = [("updates", #"[{"attributes":{"OBJECTID":1,"DBH":\#(100 + row)}}]"#), ("f", "json")]
            return try await client.postForm(base + "/0/applyEdits?f=json" + queryToken, form + bodyToken, headers: headers)
        case .addAttachment:
            let boundary = "----editlog-token-\(row)"
            var body: [UInt8] = []
            for (k, v) in [("f", "json")] + bodyToken {
                body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(k)\"\r\n\r\n\(v)\r\n".utf8)
            }
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"attachment\"; filename=\"row\(row).png\"\r\nContent-Type: image/png\r\n\r\n".utf8)
            body += (0..<64).map { UInt8(($0 + row) % 256) }
            body += Array("\r\n--\(boundary)--\r\n".utf8)
            headers[.contentType] = "multipart/form-data; boundary=\(boundary)"
            return try await client.execute(uri: base + "/0/2/addAttachment?f=json" + queryToken, method: .post, headers: headers,
                                            body: ByteBuffer(bytes: body), testCallback: answer)
        }
    }

    @Test func everyTransportEveryKindOfRequestValidWrongAndMissing() async throws {
        // No anonymous reads: a query without a token is refused too.
        try await ServedLog.run(configure: { $0.anonymousReads = false }) { client, log in
            var row = 0
            for transport in Transport.allCases {
                for kind in Kind.allCases {
                    for token in Token.allCases {
                        row += 1
                        let label = "\(transport.rawValue) \(kind.rawValue) \(token.rawValue)"
                        let value: String? = switch token {
                        case .valid: ServedLog.editorToken
                        case .wrong: "tok-wrong-9999"
                        case .empty: ""
                        case .absent: nil
                        }
                        let before = try log.value.eventCount()
                        let r = try await Self.send(client, kind, transport, value, row: row)
                        let after = try log.value.eventCount()
                        // Whatever the outcome: HTTP 200 and a JSON body an ArcGIS client parses.
                        #expect(r.status == .ok, "\(label): HTTP \(r.status.code) \(r.text)")
                        #expect(r.contentType?.hasPrefix("application/json") == true, "\(label): \(r.contentType ?? "no content type")")
                        switch token {
                        case .valid:
                            #expect(r.json["error"] == nil, "\(label): \(r.text)")
                            switch kind {
                            case .query:
                                #expect(r.json["features"]?.arrayValue?.count == 3, "\(label): \(r.text)")
                                #expect(after == before, "\(label)")
                            case .applyEdits:
                                #expect(r.json["updateResults"]?.at(0)?["success"] == true, "\(label): \(r.text)")
                                #expect(after > before, "\(label)")
                                let (_, history) = try log.value.history(globalId: Self.trees[0]["GlobalID"]!.stringValue!)
                                let entry = history.last { $0.field == "DBH" && $0.new.intValue == Int64(100 + row) }
                                #expect(entry?.actor == "alice_pdx", "\(label): \(entry.map { "\($0.actor) \($0.device)" } ?? "no DBH entry")")
                                #expect(entry?.device == "TokenMatrix/1.0", "\(label)")
                            case .addAttachment:
                                #expect(r.json["addAttachmentResult"]?["success"] == true, "\(label): \(r.text)")
                                #expect(after > before, "\(label)")
                                let (_, history) = try log.value.history(globalId: Self.trees[1]["GlobalID"]!.stringValue!)
                                let entries = history.filter { $0.field.contains("row\(row).png") || $0.new.serialized().contains("row\(row).png") }
                                #expect(!entries.isEmpty && entries.allSatisfy { $0.actor == "alice_pdx" }, "\(label): \(history.map { "\($0.field) \($0.actor)" })")
                            }
                        case .wrong, .empty, .absent:
                            let code: Int64 = token == .wrong ? 498 : 499
                            #expect(r.json["error"]?["code"]?.intValue == code, "\(label): \(r.text)")
                            #expect(r.json["error"]?["message"]?.stringValue == (token == .wrong ? "Invalid token." : "Token Required"), "\(label): \(r.text)")
                            #expect(r.json["error"]?["details"]?.arrayValue != nil, "\(label): \(r.text)")
                            #expect(after == before, "\(label): wrote \(after - before) events")
                        }
                    }
                }
            }
            #expect(row == 5 * 3 * 4)
        }
    }

    /// The `agstoken` cookie among others, with spaces, quoted, in two `Cookie` fields, next to look-alike names.
    @Test func theAgstokenCookieIsFoundAmongOthers() async throws {
        try await ServedLog.run(configure: { $0.anonymousReads = false }) { client, _ in
            let t = ServedLog.viewerToken
            let accepted: [[String]] = [
                ["agstoken=\(t)"],
                ["session=abc; agstoken=\(t); theme=dark"],
                ["  session = abc ;   agstoken =   \(t)  ;theme=dark"],
                ["agstoken=\"\(t)\""],
                ["session=\"a;b\"; AGSTOKEN=\(t)"],
                ["xagstoken=tok-wrong-1; agstoken_old=tok-wrong-2; agstoken=\(t)"],
                ["agstoken=; agstoken=\(t)"],
                ["session=abc", "agstoken=\(t)"],
            ]
            for cookies in accepted {
                var headers = HTTPFields()
                for c in cookies { headers.append(HTTPFields.Element(name: .cookie, value: c)) }
                let r = try await client.getJSON(Self.base + "/0?f=json", headers: headers)
                #expect(r.status == .ok && r.json["name"] == "Trees", "\(cookies): \(r.text)")
            }
            for (cookies, code) in [(["agstoken=tok-wrong-3"], 498), (["session=abc; agstoken=\"tok-wrong-4\""], 498),
                                    (["agstoken="], 499), (["xagstoken=\(t)"], 499), (["session=\(t)"], 499), (["agstoken"], 499)] {
                var headers = HTTPFields()
                for c in cookies { headers.append(HTTPFields.Element(name: .cookie, value: c)) }
                let r = try await client.getJSON(Self.base + "/0?f=json", headers: headers)
                #expect(r.status == .ok && r.json["error"]?["code"]?.intValue == Int64(code), "\(cookies): \(r.text)")
            }
        }
    }

    /// The first place holding a token decides: parameter, then X-Esri-Authorization, Authorization, the cookie.
    /// A stale cookie does not spoil a request that names its token; a wrong parameter is not rescued by a cookie.
    @Test func theFirstTransportHoldingATokenDecides() async throws {
        try await ServedLog.run(configure: { $0.anonymousReads = false }) { client, _ in
            let good = ServedLog.viewerToken, bad = "tok-wrong-5555"
            let cases: [(String, HTTPFields, Int64?)] = [
                ("?token=\(good)", [.cookie: "agstoken=\(bad)"], nil),
                ("?token=\(bad)", [.cookie: "agstoken=\(good)"], 498),
                ("", [HTTPFields.Element.Name("X-Esri-Authorization")!: "Bearer \(good)", .authorization: "Bearer \(bad)", .cookie: "agstoken=\(bad)"], nil),
                ("", [.authorization: "Bearer \(good)", .cookie: "agstoken=\(bad)"], nil),
                ("", [.authorization: "Bearer \(bad)", .cookie: "agstoken=\(good)"], 498),
                // Another scheme is not a token: the cookie decides.
                ("", [.authorization: "Basic dXNlcjpwdw==", .cookie: "agstoken=\(good)"], nil),
                ("", [.authorization: "bearer \(good)"], nil),
                ("?token=", [.cookie: "agstoken=\(good)"], nil),
            ]
            for (query, headers, code) in cases {
                let r = try await client.getJSON(Self.base + "/0" + query, headers: headers)
                #expect(r.status == .ok, "\(query) \(headers): \(r.text)")
                #expect(r.json["error"]?["code"]?.intValue == code, "\(query) \(headers): \(r.text)")
            }
        }
    }
}
