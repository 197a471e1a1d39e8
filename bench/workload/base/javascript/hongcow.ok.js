function countShifts(s) {
  const seen = new Set();
  let cur = s;
  for (let i = 0; i < s.length; i++) {
    seen.add(cur);
    cur = cur[cur.length - 1] + cur.slice(0, -1);
  }
  return seen.size;
}

const s = require('fs').readFileSync(0, 'utf8').trim();
console.log(countShifts(s));
