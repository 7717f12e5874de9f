-- havlak: graph code on adjacency lists -- iterative DFS, union-find with path
-- compression, many small arrays. Builds a control-flow graph of nested loops
-- (diamonds, self-loops, two-entry irreducible regions), finds the loop forest
-- with Havlak's algorithm and checks it against the loops that were built.

local DEPTH, WIDTH = 3, 3

-- loop kinds found by the analysis
local NONHEADER, REDUCIBLE, SELF, IRREDUCIBLE = 0, 1, 2, 3

---------------------------------------------------------------- graph builder
local function build_graph(nests)
  local succ, pred = {}, {}
  local n = 0
  local expect = { loops = 0, irreducible = 0, depthsum = 0 }

  local function node()
    n = n + 1
    succ[n] = {}
    pred[n] = {}
    return n
  end
  local function edge(a, b)
    local s, p = succ[a], pred[b]
    s[#s + 1] = b
    p[#p + 1] = a
  end
  local function straight(from, k)
    for _ = 1, k do
      local x = node()
      edge(from, x)
      from = x
    end
    return from
  end
  local function diamond(from)
    local a, b, join = node(), node(), node()
    edge(from, a); edge(from, b)
    edge(a, join); edge(b, join)
    return join
  end
  local function selfloop(from, level)
    local s = node()
    edge(from, s); edge(s, s)
    expect.loops = expect.loops + 1
    expect.depthsum = expect.depthsum + level
    return s
  end
  local function twoentry(from, level)
    local a, b, out = node(), node(), node()
    edge(from, a); edge(from, b)
    edge(a, b); edge(b, a)
    edge(a, out); edge(b, out)
    expect.loops = expect.loops + 1
    expect.irreducible = expect.irreducible + 1
    expect.depthsum = expect.depthsum + level
    return out
  end
  local function nest(from, depth, level)
    local header = node()
    edge(from, header)
    expect.loops = expect.loops + 1
    expect.depthsum = expect.depthsum + level
    local cur = header
    if depth == 0 then
      cur = diamond(cur)
      cur = selfloop(cur, level + 1)
      cur = diamond(cur)
      cur = straight(cur, 2)
    else
      for _ = 1, WIDTH do
        cur = nest(cur, depth - 1, level + 1)
        cur = diamond(cur)
      end
      if depth == 1 then cur = twoentry(cur, level + 1) end
    end
    local latch = straight(cur, 1)
    edge(latch, header)
    local exit = node()
    edge(latch, exit)
    return exit
  end

  local start = node()
  local cur = start
  for _ = 1, nests do
    cur = nest(cur, DEPTH, 1)
    cur = straight(cur, 1)
  end
  return { n = n, succ = succ, pred = pred, start = start }, expect
end

---------------------------------------------------------------- Havlak
local function find_loops(g)
  local succ, pred = g.succ, g.pred

  -- 1. iterative DFS: preorder numbers and the last number in each subtree
  local number, nodeof, last = {}, {}, {}
  for v = 1, g.n do number[v] = 0 end
  local count = 0
  local stack, pos = { g.start }, { 1 }
  count = 1
  number[g.start] = 1
  nodeof[1] = g.start
  local sp = 1
  while sp > 0 do
    local v = stack[sp]
    local i = pos[sp]
    local s = succ[v]
    if i <= #s then
      pos[sp] = i + 1
      local w = s[i]
      if number[w] == 0 then
        count = count + 1
        number[w] = count
        nodeof[count] = w
        sp = sp + 1
        stack[sp] = w
        pos[sp] = 1
      end
    else
      last[number[v]] = count
      stack[sp] = nil
      sp = sp - 1
    end
  end

  -- 2. split predecessors into back edges and other edges (preorder space)
  local backpreds, nonbackpreds, header, kind, uf = {}, {}, {}, {}, {}
  for w = 1, count do
    local bp, nbp = {}, {}
    local ps = pred[nodeof[w]]
    local lw = last[w]
    for i = 1, #ps do
      local v = number[ps[i]]
      if v ~= 0 then
        if w <= v and v <= lw then
          bp[#bp + 1] = v
        else
          nbp[#nbp + 1] = v
        end
      end
    end
    backpreds[w], nonbackpreds[w] = bp, nbp
    header[w] = 1
    kind[w] = NONHEADER
    uf[w] = w
  end

  local function find(x)
    local root = x
    while uf[root] ~= root do root = uf[root] end
    while uf[x] ~= root do
      local nxt = uf[x]
      uf[x] = root
      x = nxt
    end
    return root
  end

  -- 3. bottom-up over preorder: collapse each loop body into its header
  local loops, loopof = {}, {}
  local inpool = {}
  for w = 1, count do inpool[w] = 0 end
  for w = count, 1, -1 do
    local pool, work = {}, {}
    local bp = backpreds[w]
    for i = 1, #bp do
      local v = bp[i]
      if v ~= w then
        local x = find(v)
        if inpool[x] ~= w then
          inpool[x] = w
          pool[#pool + 1] = x
          work[#work + 1] = x
        end
      else
        kind[w] = SELF
      end
    end
    if #pool > 0 then kind[w] = REDUCIBLE end
    local lw = last[w]
    while #work > 0 do
      local x = work[#work]
      work[#work] = nil
      local nbp = nonbackpreds[x]
      for i = 1, #nbp do
        local y = find(nbp[i])
        if y < w or y > lw then
          kind[w] = IRREDUCIBLE
          local own = nonbackpreds[w]
          local seen = false
          for j = 1, #own do
            if own[j] == y then seen = true; break end
          end
          if not seen then own[#own + 1] = y end
        elseif y ~= w and inpool[y] ~= w then
          inpool[y] = w
          pool[#pool + 1] = y
          work[#work + 1] = y
        end
      end
    end
    if #pool > 0 or kind[w] == SELF then
      local loop = { header = w, irreducible = kind[w] == IRREDUCIBLE,
                     parent = nil, size = 1 }
      loops[#loops + 1] = loop
      loopof[w] = loop
      for i = 1, #pool do
        local x = pool[i]
        header[x] = w
        uf[x] = w
        local inner = loopof[x]
        if inner ~= nil then
          inner.parent = loop
        else
          loop.size = loop.size + 1
        end
      end
    end
  end

  -- 4. nesting depths: parents are created after their children
  local irreducible, depthsum, maxdepth, blocks = 0, 0, 0, 0
  for i = #loops, 1, -1 do
    local loop = loops[i]
    local d = 1
    if loop.parent ~= nil then d = loop.parent.depth + 1 end
    loop.depth = d
    depthsum = depthsum + d
    if d > maxdepth then maxdepth = d end
    if loop.irreducible then irreducible = irreducible + 1 end
    blocks = blocks + loop.size
  end
  return #loops, irreducible, depthsum, maxdepth, blocks
end

local function run(nests)
  local g, expect = build_graph(nests)
  local loops, irreducible, depthsum, maxdepth, blocks = find_loops(g)
  if loops ~= expect.loops or irreducible ~= expect.irreducible
     or depthsum ~= expect.depthsum then
    error("havlak: loop forest does not match the generated graph")
  end
  return string.format("nodes=%d loops=%d irreducible=%d depthsum=%d maxdepth=%d blocks=%d",
    g.n, loops, irreducible, depthsum, maxdepth, blocks)
end

return { run = run }
