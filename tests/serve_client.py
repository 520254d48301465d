"""serve_client.py: strata serve through Python's own HTTP client (http.client).

    python3 tests/serve_client.py http://127.0.0.1:PORT

One persistent connection carries every request below in turn (keep-alive):
puts (one with a chunked body), a get, an update, a search by POST and by
GET, a visit, then errors; each answer's status, Content-Type and JSON are
checked against what was sent.  Prints one line per failed check and
"client: N passed, M failed"; the exit status is 1 when any failed.
"""
import http.client
import json
import sys
import urllib.parse

from pycheck import check, finish, set_suite

url = urllib.parse.urlparse(sys.argv[1])
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
set_suite("client")


def call(method, path, body=None, chunked=False):
    headers = {"Content-Type": "application/json"}
    if chunked:
        conn.request(method, path, body=iter([body[:7].encode(), body[7:].encode()]),
                     headers=headers, encode_chunked=True)
    else:
        conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    check(method + " " + path + " content type", r.getheader("Content-Type"),
          "application/json;charset=utf-8")
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, None


doc = "/document/v1/client/product/docid/"
for i, price in enumerate([0.25, 0.125, 0.375]):
    st, j = call("POST", doc + "c%d" % i,
                 json.dumps({"fields": {"title": "client %d" % i, "price": price}}), chunked=i == 1)
    check("put c%d" % i, (st, j and j.get("id")), (200, "id:client:product::c%d" % i))
st, j = call("GET", doc + "c1")
check("get chunked put", (st, j["fields"]["title"], j["fields"]["price"]), (200, "client 1", 0.125))
st, j = call("PUT", doc + "c2", json.dumps({"fields": {"price": {"assign": 0.0625}}}))
check("update", st, 200)
req = {"yql": "select * from product where price < 0.5", "ranking.profile": "cheap"}
st, j = call("POST", "/search/", json.dumps(req))
ids = [h["id"] for h in j["root"].get("children", [])] if j else None
check("search POST order", (st, ids),
      (200, ["id:client:product::c2", "id:client:product::c1", "id:client:product::c0"]))
q = urllib.parse.urlencode({"yql": "select * from product where price < 0.1", "hits": "5"})
st, j = call("GET", "/search/?" + q)
check("search GET", (st, [h["id"] for h in j["root"].get("children", [])]),
      (200, ["id:client:product::c2"]))
st, j = call("GET", "/document/v1/client/product/docid?wantedDocumentCount=10")
check("visit", (st, sorted(d["id"] for d in j["documents"])),
      (200, ["id:client:product::c%d" % i for i in range(3)]))
st, j = call("POST", "/search/", "{not json")
check("malformed", (st, j["root"]["errors"][0]["code"]), (400, 3))
st, j = call("DELETE", doc + "c0")
check("remove", st, 200)
st, j = call("GET", doc + "c0")
check("removed", st, 404)
conn.close()
finish()
