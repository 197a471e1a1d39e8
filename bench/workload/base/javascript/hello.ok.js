const s = require('fs').readFileSync(0, 'utf8').trim();
const target = 'hello';
let j = 0;
for (const ch of s) {
  if (j < target.length && ch === target[j]) j++;
}
console.log(j === target.length ? 'YES' : 'NO');
