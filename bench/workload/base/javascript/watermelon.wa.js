const w = parseInt(require('fs').readFileSync(0, 'utf8'), 10);
console.log(w % 2 === 0 ? 'YES' : 'NO');
