-- HAProxy's auth-request for the gateway in decision mode (GATEWAY_MODE=decision), on HAProxy's
-- own Lua HTTP client (core.httpclient, HAProxy 2.5 and later): no haproxy-lua-http, no JSON
-- library. The config `npm run proxy-config -- haproxy` generates loads this file and calls
--
--   http-request lua.gateway_decide <decision URL> <timeout ms> <request headers the gateway reads>
--
-- after setting txn.gw_method, txn.gw_uri and txn.gw_client from HAProxy's own view of the request
-- (a client's copy of a header can never say what the original request was). A 200 is an allow:
-- each header of the answer becomes txn.gw_h_<name> (dashes as underscores) for the config's
-- set-header and set-uri rules, and txn.gw_allowed is set; the config refuses every request
-- without it, so an error in this script fails closed. Any other answer (a refusal, a preflight's
-- 204, the decision service's failure) is given to the client as it is: status, headers, body.

local HOP_BY_HOP = {
  ["connection"] = true, ["keep-alive"] = true, ["proxy-connection"] = true, ["te"] = true,
  ["trailer"] = true, ["transfer-encoding"] = true, ["upgrade"] = true, ["content-length"] = true,
}

local function joined(values)
  local parts = {}
  for i = 0, #values do
    if values[i] ~= nil then parts[#parts + 1] = values[i] end
  end
  return table.concat(parts, ", ")
end

core.register_action("gateway_decide", { "http-req" }, function(txn, url, timeout, judged)
  local request = txn.http:req_get_headers()
  local headers = {
    ["x-original-method"] = { txn:get_var("txn.gw_method") or "" },
    ["x-original-uri"] = { txn:get_var("txn.gw_uri") or "" },
    ["x-forwarded-for"] = { txn:get_var("txn.gw_client") or "" },
  }
  -- What the client declared about its body: the decision gets no body, only these.
  if request["content-length"] ~= nil then
    headers["x-original-content-length"] = { joined(request["content-length"]) }
  end
  if request["transfer-encoding"] ~= nil then
    headers["x-original-transfer-encoding"] = { joined(request["transfer-encoding"]) }
  end
  for name in string.gmatch(judged, "[^,]+") do
    if request[name] ~= nil then headers[name] = { joined(request[name]) } end
  end
  local answer = core.httpclient():get{ url = url, headers = headers, timeout = tonumber(timeout) }
  if answer == nil or answer.status == nil or answer.status == 0 then
    txn:done(txn:reply{ status = 503, reason = "Service Unavailable" })
    return
  end
  if answer.status == 200 then
    for name, values in pairs(answer.headers) do
      if not HOP_BY_HOP[name] then
        txn:set_var("txn.gw_h_" .. string.gsub(name, "-", "_"), joined(values))
      end
    end
    txn:set_var("txn.gw_allowed", true)
    return
  end
  local out = {}
  for name, values in pairs(answer.headers) do
    if not HOP_BY_HOP[name] then out[name] = { joined(values) } end
  end
  txn:done(txn:reply{ status = answer.status, headers = out, body = answer.body or "" })
end, 3)
